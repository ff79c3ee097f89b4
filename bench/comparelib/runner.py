"""One run of bench/mpi_pingpong through one transport: mpirun with a time limit (the
whole process group is killed when it is over), its table parsed, or the reason it
failed in a line."""
import os
import re
import signal
import subprocess
import time

# bytes, latency, bandwidth, msg rate (means), latency and bandwidth p50
ROW = re.compile(r"^\s*(\d+)" + r"\s+([\d.]+)" * 5 + r"\s*$", re.M)
TELLING = re.compile(r"error|fail|unable|unreachable|abort|cannot|could not|timeout|no component"
                     r"|not available|killed|signal", re.I)


NOISE = re.compile(r"^\d+\s+(/|0x)|show_help\.c|^=+$")


class Run:
    def __init__(self, rows=None, error=None, seconds=0.0, command=""):
        # [(size, latency_us, bandwidth_MBs, msg_rate_Mps, latency_p50_us, bandwidth_p50_MBs)]
        self.rows = rows or []
        self.error = error  # None, or why the run gave no table
        self.seconds = seconds
        self.command = command


def mpi_env():
    env = dict(os.environ)
    if os.geteuid() == 0:
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    return env


def why(output, status):
    """The lines of a failed run's output that say what went wrong, in one line."""
    lines = [l.strip(" *|-\t") for l in output.splitlines()]
    # Not the table's rows, a backtrace's frames or Open MPI's note about its own help.
    lines = [l for l in lines if l and not ROW.match(l) and not NOISE.search(l)]
    picked = [l for l in lines if TELLING.search(l)] or lines[-3:]
    seen, out = set(), []
    for l in picked:
        if l not in seen:
            seen.add(l)
            out.append(l)
    text = " | ".join(out[:4]) or "no output"
    return f"exit status {status}: {text}"[:400]


def session_members(sid):
    """The processes of session sid: mpirun and whatever it started, even the ranks it
    moved into process groups of their own."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            if int(fields[3]) == sid:  # after the name: state, ppid, pgrp, session
                pids.append(int(entry))
        except (OSError, IndexError, ValueError):
            pass
    return pids


def stop(p):
    """Ends a run that is over its time: SIGTERM to mpirun (it stops its ranks), then
    SIGKILL to every process left in its session. Returns what it had printed."""
    try:
        os.killpg(p.pid, signal.SIGTERM)
        out, _ = p.communicate(timeout=5)
    except (subprocess.TimeoutExpired, ProcessLookupError):
        out = ""
    for _ in range(2):
        for pid in session_members(p.pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.2)
    if p.poll() is None:
        p.kill()
    rest, _ = p.communicate()
    return (out or "") + (rest or "")


def run(transport, program, args, timeout_s, bind=True):
    cmd = ["mpirun", "-np", "2", "--mca", "oob_tcp_if_include", "lo"]
    if bind:
        cmd += ["--bind-to", "core"]
    cmd += transport.mpirun_args() + [program] + args
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, env=mpi_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True, start_new_session=True)
    try:
        out, _ = p.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        out = stop(p)
        telling = [l.strip() for l in out.splitlines() if TELLING.search(l)]
        return Run(error=f"no result within {timeout_s} s (killed)" +
                   (": " + " | ".join(telling[:3]) if telling else ""),
                   seconds=time.monotonic() - t0, command=" ".join(cmd))
    secs = time.monotonic() - t0
    rows = [(int(r[0]),) + tuple(float(x) for x in r[1:]) for r in ROW.findall(out)]
    if p.returncode != 0 or not rows:
        return Run(error=why(out, p.returncode), seconds=secs, command=" ".join(cmd))
    return Run(rows=rows, seconds=secs, command=" ".join(cmd))
