"""Reads callgrind output files (the parts of one run, summed): self cost by where the code
was written, and call counts by function name."""
import collections
import re

_REF = re.compile(r"\((\d+)\)(?: (.*))?$")


class Profile:
    """self_cost[(object, source file, function)] and arcs[((caller object, function),
    (callee object, function))], the calls along each arc."""

    def __init__(self, *paths):
        self.self_cost = collections.Counter()
        self.arcs = collections.Counter()
        for path in paths:
            self._read(path)

    @property
    def calls(self):
        """Calls to each (object, function name), from every caller."""
        out = collections.Counter()
        for (_, callee), n in self.arcs.items():
            out[callee] += n
        return out

    def _read(self, path):
        names = {"ob": {}, "fl": {}, "fn": {}}
        table = {"ob": "ob", "cob": "ob", "fl": "fl", "fi": "fl", "fe": "fl", "cfi": "fl",
                 "cfl": "fl", "fn": "fn", "cfn": "fn"}

        def name(kind, value):
            m = _REF.match(value)
            if not m:
                return value
            t = names[table[kind]]
            if m.group(2) is not None:
                t[m.group(1)] = m.group(2)
            return t.get(m.group(1), value)

        ob = cob = fl = fn = cfn = None
        src = None
        in_call = False
        with open(path) as f:
            for line in f:
                line = line.rstrip("\n")
                key, sep, value = line.partition("=")
                if sep and key in table:
                    v = name(key, value)
                    if key == "ob":
                        ob = v
                    elif key == "cob":
                        cob = v
                    elif key == "fl":
                        fl = src = v
                    elif key in ("fi", "fe"):
                        src = v
                    elif key == "fn":
                        fn, src = v, fl
                    elif key == "cfn":
                        cfn = v
                    continue
                if key == "calls" and sep:
                    n = int(value.split()[0])
                    self.arcs[((ob, fn), (cob or ob, cfn))] += n
                    cob, in_call = None, True  # cob names the callee of one call only
                    continue
                if line[:1].isdigit() or line[:1] in "+-*":
                    parts = line.split()
                    if in_call:  # the inclusive cost of the call just named
                        in_call = False
                    elif len(parts) > 1:
                        self.self_cost[(ob, src, fn)] += int(parts[1])

    def split(self, classify):
        """Self cost summed by classify(object, file, function) -> part name."""
        out = collections.Counter()
        for (ob, src, fn), cost in self.self_cost.items():
            out[classify(ob or "", src or "", fn or "")] += cost
        return out

    def calls_to(self, pattern):
        """Calls to every function whose name matches pattern (a regular expression)."""
        rx = re.compile(pattern)
        return sum(c for (_, f), c in self.calls.items() if f and rx.search(f))

    def calls_from(self, caller, object_pattern):
        """Calls from the function named caller to the functions of the objects matching
        object_pattern."""
        rx = re.compile(object_pattern)
        return sum(c for (a, b), c in self.arcs.items()
                   if a[1] == caller and b[0] and rx.search(b[0]))

    def most_called_in(self, object_pattern):
        """Calls to the most-called function of the objects matching object_pattern (for a
        stripped library, whose functions have addresses for names)."""
        rx = re.compile(object_pattern)
        per_fn = collections.Counter()
        for (ob, f), c in self.calls.items():
            if ob and rx.search(ob):
                per_fn[f] += c
        return max(per_fn.values(), default=0)

    def caller_of_most_called_in(self, object_pattern):
        """The function that calls the most-called function of the objects matching
        object_pattern most often: a benchmark's loop around its poll."""
        rx = re.compile(object_pattern)
        calls = self.calls
        callee = max(((c, k) for k, c in calls.items() if k[0] and rx.search(k[0])),
                     default=(0, None))[1]
        callers = collections.Counter({a[0]: c for a, c in self.arcs.items() if a[1] == callee})
        return callers.most_common(1)[0][0][1] if callers else None
