"""The programs bench/count-verbs measures, each started as a pair of processes under a
tool (callgrind or strace) in the Soft-RoCE VM, and how to read their profiles."""
import os
import re
import shlex
import subprocess
import time


def _listening(port):
    """Whether a TCP socket listens on port (perftest's out-of-band exchange)."""
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                for row in f.readlines()[1:]:
                    local, state = row.split()[1], row.split()[3]
                    if state == "0A" and int(local.rsplit(":", 1)[1], 16) == port:
                        return True
        except OSError:
            pass
    return False


class Perftest:
    """ib_send_lat -s 8: a server and a client, raw verbs, the floor."""
    name = "perftest"
    roles = ("server", "client")
    answering = "server"  # the side that answers each ping: its loop reads no clock
    measured_run = 1  # the loop runs once

    def __init__(self, build, dev, addr):
        self.dev, self.addr, self.port = dev, addr, 18700
        self.loop = None  # the latency loop's function, found by a first run (stripped)
        self.loop_exit = None

    def run(self, prefix, n, timeout, loops=1):
        """prefix(role) -> the tool's command words (none: that role runs natively);
        loops: how many times the measured loop runs (ib_send_lat runs it once).
        Raises on failure."""
        self.port += 1
        base = ["ib_send_lat", "-d", self.dev, "-s", "8", "-n", str(n), "-p", str(self.port)]
        srv = subprocess.Popen(prefix("server") + base, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True)
        deadline = time.time() + timeout
        while not _listening(self.port):
            if srv.poll() is not None or time.time() > deadline:
                srv.kill()
                raise RuntimeError(f"ib_send_lat's server did not listen: {srv.stderr.read()}")
            time.sleep(0.1)
        cli = subprocess.run(prefix("client") + base + [self.addr], stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, text=True, timeout=timeout)
        try:
            srv.wait(timeout=max(deadline - time.time(), 10))
        finally:
            srv.kill()
        if cli.returncode or srv.returncode:
            raise RuntimeError(f"ib_send_lat failed: {cli.stderr[-500:]} {srv.stderr.read()[-500:]}")

    @staticmethod
    def poll_iterations(profile):
        return profile.most_called_in(r"librxe|libmlx|libibverbs/")

    def find_loop(self, profile):
        self.loop = self.loop_exit = profile.caller_of_most_called_in(
            r"librxe|libmlx|libibverbs/")

    @staticmethod
    def part(ob, src, fn):
        if "libibverbs" in ob or "rdmav" in ob:
            return "libibverbs+provider"
        if "ib_send_lat" in ob:
            return "program"
        return "libc" if "libc.so" in ob else "other"

    mine = ("program", "libibverbs+provider", "libc", "other")


class RdmxPerf:
    """rdmx_perf --test lat over native verbs (RDMX_SHM=off: both ranks share the host)."""
    name = "rdmx-verbs"
    roles = ("rank0", "rank1")
    answering = "rank1"  # the side that answers each ping: its loop reads no clock
    env = {"RDMX_FABRIC": "verbs", "RDMX_SHM": "off"}

    # src/tools/perf_loops.cpp: the loop, and its caller (callgrind sees no exit from
    # the loop itself)
    loop = "rdmx::tools::(anonymous namespace)::latency(*"
    loop_exit = "rdmx::tools::run_step(*"
    # Under callgrind the loop runs twice (--test lat,lat) and the second run is measured: the first
    # meets what the start-up leaves to settle (the connection that lost a crossing,
    # whose 68 receives are flushed at a time that differs from run to run), which the
    # fit would otherwise take for a round trip's work.
    measured_run = 2

    def __init__(self, build, dev, addr):
        self.build = build

    def run(self, prefix, n, timeout, loops=1):
        cmd = [os.path.join(self.build, "src/tools/rdmx_perf"), "--test",
               ",".join(["lat"] * loops), "--fabric",
               "verbs", "--min-size", "8", "--max-size", "8", "--warmup", "0", "--iters",
               str(n), "--timeout-ms", str(timeout * 1000)]
        # Each rank picks its own tool by $RDMX_RANK, in the shell rdmx_launch starts.
        rank = [" ".join(shlex.quote(w) for w in prefix(role) + cmd) for role in self.roles]
        script = f'if [ "$RDMX_RANK" = 0 ]; then exec {rank[0]}; else exec {rank[1]}; fi'
        env = dict(os.environ, **self.env)
        r = subprocess.run([os.path.join(self.build, "src/tools/rdmx_launch"), "-n", "2", "--",
                            "sh", "-c", script], env=env, stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, text=True, timeout=timeout)
        if r.returncode:
            raise RuntimeError(f"rdmx_perf failed: {r.stderr[-800:]}")

    @staticmethod
    def poll_iterations(profile):
        return profile.calls_to(r"^rdmx_progress$")

    @staticmethod
    def part(ob, src, fn):
        if "libibverbs" in ob or "rdmav" in ob:
            return "libibverbs+provider"
        if "/src/" in src:  # rdmx's own sources, wherever inlined
            if "/src/tools/" in src:
                return "program"
            return "rdmx fabric" if "/src/fabric/" in src else "rdmx engine"
        if "libc.so" in ob:
            return "libc"
        # Code inlined from a system header (std::vector, verbs.h's inline calls) counts
        # for the function it was inlined into, named without its template arguments.
        owner = re.split(r"[<(]", re.sub(r"^(?:[\w:]+ )?", "", fn), maxsplit=1)[0]
        if owner.startswith("rdmx::tools::"):
            return "program"
        if owner.startswith(("rdmx::verbs::", "rdmx::rails::", "rdmx::fabric::")):
            return "rdmx fabric"
        return "rdmx engine" if owner.startswith("rdmx") else "other"

    # what counts as rdmx's: everything but the benchmark's own loop
    mine = ("rdmx engine", "rdmx fabric", "libibverbs+provider", "libc", "other")
