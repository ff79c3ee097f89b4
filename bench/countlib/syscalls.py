"""Reads `strace -f -y -ttt` output: system calls by name and, for read, write and ioctl,
by what the descriptor is (rdma_cm's channel, a uverbs device, anything else)."""
import collections
import re

_CALL = re.compile(r"^\d+\s+([\d.]+)\s+(\w+)\((?:(\d+)<([^>]*)>)?")


def _fd_kind(path):
    if "rdma_cm" in path:
        return "rdma_cm"
    if "uverbs" in path:
        return "uverbs"
    if "infinibandevent" in path:
        return "device events"
    return "other"


def time_driven(key):
    """Calls a busy loop makes once a clock tick (looks at the rdma_cm channel and the
    device's events) or once so many polls (a timeout's clock), and sleeps (a launcher's
    or a start-up's wait for its peer, longer in one run than another), not once a
    message."""
    return key in ("poll", "clock_gettime", "gettimeofday", "clock_nanosleep",
                   "nanosleep") or key.endswith(
        (":rdma_cm", ":device events"))


class Trace:
    """counts[key] with key "name" or "name:fd kind", and the seconds the trace spans."""

    def __init__(self, path):
        self.counts = collections.Counter()
        first = last = None
        with open(path) as f:
            for line in f:
                m = _CALL.match(line)
                if not m:  # "<... resumed>", signals, exits: the call was counted at its start
                    continue
                t, name, fd, fd_path = float(m.group(1)), m.group(2), m.group(3), m.group(4)
                first = t if first is None else first
                last = t
                key = name if fd is None else f"{name}:{_fd_kind(fd_path or '')}"
                self.counts[key] += 1
        self.seconds = (last - first) if first is not None else 0.0


def per_round_trip(short, long, n_short, n_long):
    """Calls per round trip of each key, by differencing two runs of n_short and n_long
    round trips (what both runs do once, start-up and teardown, drops out), but for the
    time-driven ones: those per second of the long run."""
    dn = n_long - n_short
    keys = set(short.counts) | set(long.counts)
    per = {k: (long.counts[k] - short.counts[k]) / dn for k in keys if not time_driven(k)}
    rate = {k: long.counts[k] / max(long.seconds, 1e-9) for k in keys if time_driven(k)}
    return per, rate
