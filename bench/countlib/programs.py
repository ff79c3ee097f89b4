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


def serve(server, client, port, timeout, env=None):
    """Starts server, waits until it listens on TCP port, runs client to the end, waits
    for the server: (return codes, stderr texts) of (client, server). Raises when the
    server does not listen within timeout seconds."""
    env = env or {}
    srv = subprocess.Popen(server, env=env.get("server"), stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, text=True)
    deadline = time.time() + timeout
    while not _listening(port):
        if srv.poll() is not None or time.time() > deadline:
            srv.kill()
            raise RuntimeError(f"{server[0]}'s server did not listen: {srv.stderr.read()}")
        time.sleep(0.1)
    cli = subprocess.run(client, env=env.get("client"), stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True, timeout=timeout)
    try:
        srv.wait(timeout=max(deadline - time.time(), 10))
    finally:
        srv.kill()
    return (cli.returncode, srv.returncode), (cli.stderr, srv.stderr.read())


class Measure:
    """What is counted: a ping-pong of `size` bytes, per round trip (window 0), or windows
    of `window` sends of `size` bytes in flight, per message."""

    def __init__(self, name, size, window=0):
        self.name, self.size, self.window = name, size, window

    @property
    def unit(self):
        return "message" if self.window else "round trip"

    def count(self, iters):
        """Round trips, or messages, of a short run: a window's messages cost little
        each, so a run has 8 times as many, whole windows."""
        if not self.window:
            return iters
        return -(-iters * 8 // self.window) * self.window


MEASURES = {m.name: m for m in (Measure("lat8", 8), Measure("window8", 8, 64),
                                Measure("window4k", 4096, 64))}


class Perftest:
    """ib_send_lat -s 8, or ib_send_bw with a send queue as deep as the window (-t): a
    server and a client, raw verbs, the floor."""
    name = "perftest"
    windows = True
    roles = ("server", "client")
    measured_run = 1  # the loop runs once

    def __init__(self, build, dev, addr, measure):
        self.dev, self.addr, self.port = dev, addr, 18700
        self.measure = measure
        # The side that answers each ping (its loop reads no clock), or both sides.
        self.counted = ("server",) if not measure.window else self.roles
        self.tool = "ib_send_bw" if measure.window else "ib_send_lat"
        self.loop = None  # each role's loop function, found by a first run (stripped)
        self.loop_exit = None

    def run(self, prefix, n, timeout, loops=1):
        """prefix(role) -> the tool's command words (none: that role runs natively);
        loops: how many times the measured loop runs (ib_send_lat runs it once).
        Raises on failure."""
        self.port += 1
        base = [self.tool, "-d", self.dev, "-s", str(self.measure.size), "-n", str(n), "-p",
                str(self.port)]
        if not self.measure.window:
            # ib_send_lat posts its receive queue's depth (512 by default) before its loop
            # and puts a receive back only for a message past that many: a run of 500
            # round trips put none back and one of 1,000 put back 488, which no line
            # through both runs fits. With 64, as rdmx's receive window, every run puts
            # back all but 64. (A window's runs, of 4,032 messages and more, are past 512.)
            base += ["-r", "64"]
        else:
            # ibv_post_send, as rdmx posts: one call into the provider a message (the
            # newer ibv_wr_* calls are several), which poll_iterations counts on.
            base += ["-t", str(self.measure.window), "--use_old_post_send"]
        rcs, errs = serve(prefix("server") + base, prefix("client") + base + [self.addr],
                          self.port, timeout)
        # ib_send_bw measures the CPU's clock against the time of day before its report,
        # and under valgrind in a VM finds it too irregular ("Can't produce a report"):
        # its loop has run to the end, and only the report, not wanted here, is missing.
        failed = [e for rc, e in zip(rcs, errs) if rc and "Can't produce a report" not in e]
        if failed:
            raise RuntimeError(f"{self.tool} failed: {errs[0][-500:]} {errs[1][-500:]}")

    _PROVIDER = r"librxe|libmlx|libibverbs/"

    def poll_iterations(self, profile, role, n):
        """A ping-pong's loop calls the provider's poll most often. A window's loop posts
        once a message (a send, or a receive put back) and polls in between: its
        calls into the provider less the n posts."""
        if not self.measure.window:
            return profile.most_called_in(self._PROVIDER)
        return profile.calls_from(self.loop[role], self._PROVIDER) - n

    def find_loop(self, profiles):
        """profiles: {role: Profile of a run counting everything}."""
        self.loop = {r: p.caller_of_most_called_in(self._PROVIDER) for r, p in profiles.items()}
        self.loop_exit = self.loop

    @staticmethod
    def part(ob, src, fn):
        if "libibverbs" in ob or "rdmav" in ob:
            return "libibverbs+provider"
        if "ib_send_" in ob:
            return "program"
        return "libc" if "libc.so" in ob else "other"

    mine = ("program", "libibverbs+provider", "libc", "other")


class RdmxPerf:
    """rdmx_perf --test lat, or --test bw with --window, over native verbs (RDMX_SHM=off:
    both ranks share the host)."""
    name = "rdmx-verbs"
    windows = True  # measures windows as well as ping-pongs
    roles = ("rank0", "rank1")
    fabric = "verbs"
    env = {"RDMX_FABRIC": "verbs", "RDMX_SHM": "off"}

    def __init__(self, build, dev, addr, measure):
        self.build, self.measure = build, measure
        # The side that answers each ping (its loop reads no clock), or both sides.
        self.counted = ("rank1",) if not measure.window else self.roles
        self.test = "bw" if measure.window else "lat"
        # src/tools/perf_loops.cpp: the loop, and its caller (callgrind sees no exit
        # from the loop itself)
        fn = "windows" if measure.window else "latency"
        self.loop = {r: f"rdmx::tools::(anonymous namespace)::{fn}(*" for r in self.roles}
        self.loop_exit = {r: "rdmx::tools::run_step(*" for r in self.roles}
    # Under callgrind the loop runs twice (--test lat,lat) and the second run is measured: the first
    # meets what the start-up leaves to settle (the connection that lost a crossing,
    # whose 68 receives are flushed at a time that differs from run to run), which the
    # fit would otherwise take for a round trip's work.
    measured_run = 2

    def run(self, prefix, n, timeout, loops=1):
        m = self.measure
        cmd = [os.path.join(self.build, "src/tools/rdmx_perf"), "--test",
               ",".join([self.test] * loops), "--fabric", self.fabric, "--min-size", str(m.size),
               "--max-size", str(m.size), "--warmup", "0", "--iters",
               str(n // m.window if m.window else n), "--timeout-ms", str(timeout * 1000)]
        if m.window:
            cmd += ["--window", str(m.window)]
        self.launch([os.path.join(self.build, "src/tools/rdmx_launch"), "-n", "2", "--"],
                    "RDMX_RANK", prefix, cmd, self.env, timeout)

    def launch(self, launcher, rank_var, prefix, cmd, env, timeout):
        """Starts cmd as two ranks under launcher, each under its own prefix: the rank
        picks it by $rank_var in the shell the launcher starts. Returns the ranks'
        standard error; raises on failure."""
        rank = [" ".join(shlex.quote(w) for w in prefix(role) + cmd) for role in self.roles]
        script = f'if [ "${rank_var}" = 0 ]; then exec {rank[0]}; else exec {rank[1]}; fi'
        r = subprocess.run(launcher + ["sh", "-c", script], env=dict(os.environ, **env),
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                           timeout=timeout)
        if r.returncode:
            raise RuntimeError(f"{os.path.basename(cmd[0])} failed: {r.stderr[-800:]}")
        return r.stderr

    @staticmethod
    def poll_iterations(profile, role, n):
        return profile.calls_to(r"^rdmx_progress$")

    @staticmethod
    def part(ob, src, fn):
        if "libibverbs" in ob or "rdmav" in ob:
            return "libibverbs+provider"
        if "libfabric" in ob:
            return "libfabric"
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
        if owner.startswith(("rdmx::verbs::", "rdmx::rails::", "rdmx::fabric::", "rdmx::ofi::")):
            return "rdmx fabric"
        return "rdmx engine" if owner.startswith("rdmx") else "other"

    # what counts as rdmx's: everything but the benchmark's own loop
    mine = ("rdmx engine", "rdmx fabric", "libfabric", "libibverbs+provider", "libc", "other")


class RdmxPerfOfi(RdmxPerf):
    """The same over libfabric's verbs provider (rdmx's ofi fabric, FI_EP_MSG endpoints):
    what reaching the device through libfabric costs."""
    name = "rdmx-ofi-verbs"
    fabric = "ofi"
    env = {"RDMX_FABRIC": "ofi", "RDMX_OFI_PROVIDER": "verbs", "RDMX_SHM": "off"}


class MpiPingpong(RdmxPerf):
    """bench/mpi_pingpong's latency loop (8 bytes, MPI_Send and MPI_Recv) under mpirun
    through Open MPI's pml cm and the rdmx MTL, over native verbs: what an MPI program
    spends per round trip. Ping-pong only (no windows)."""
    name = "mpi-rdmx-verbs"
    windows = False
    env = {"RDMX_FABRIC": "verbs", "RDMX_SHM": "off", "OMPI_ALLOW_RUN_AS_ROOT": "1",
           "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}

    def __init__(self, build, dev, addr, measure):
        super().__init__(build, dev, addr, measure)
        fn = "latency_us"
        self.loop = {r: fn for r in self.roles}
        self.loop_exit = self.loop
        # Open MPI's own component directory first, then the rdmx MTL's
        # (tests/mpi/run-mpi-tests finds it the same way).
        out = subprocess.run(["ompi_info", "--param", "mca", "base", "--level", "9",
                              "--parsable"], capture_output=True, text=True).stdout
        found = re.search(r'mca_base_component_path:value:"?([^:"\n]*)', out,
                          re.M)
        self.component_path = (found.group(1) + ":" if found else "") + os.path.join(
            build, "plugin", ".libs")

    def run(self, prefix, n, timeout, loops=1):
        prog = [os.path.join(self.build, "bench/mpi_pingpong"), "--sizes",
                ",".join([str(self.measure.size)] * loops), "--iters", str(n), "--latency-only"]
        self.launch(["mpirun", "-np", "2", "--mca", "pml", "cm", "--mca", "mtl", "rdmx"],
                    "OMPI_COMM_WORLD_RANK", prefix, prog,
                    dict(self.env, OMPI_MCA_mca_base_component_path=self.component_path), timeout)

    @staticmethod
    def part(ob, src, fn):
        # The component carries the engine and fabric in its object: by source first.
        if "/plugin/" in src:
            return "rdmx MTL"
        if "mpi_pingpong" in ob:
            return "program"
        if "libmpi" in ob or "openmpi" in ob or "libopen-" in ob or "pmix" in ob:
            return "Open MPI"
        return RdmxPerf.part(ob, src, fn)

    mine = RdmxPerf.mine + ("Open MPI", "rdmx MTL")


PROGRAMS = {p.name: p for p in (Perftest, RdmxPerf, RdmxPerfOfi, MpiPingpong)}
