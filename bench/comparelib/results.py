"""What bench/compare measured: one record per transport, size and repetition (or one per
failed run), the CSV they are written to, and their medians and spreads."""
import csv
import statistics

METRICS = [  # key, CSV column, label, unit, higher is better
    ("lat", "latency_us", "latency", "µs", False),
    ("bw", "bandwidth_MBs", "bandwidth", "MB/s", True),
    ("mr", "msg_rate_Mps", "message rate", "M msg/s", True),
]
# The same at the median iteration or window of each run (key + "50", column + "_p50").
STATS = {"mean": "", "p50": "50"}
KEYS = [k for k, *_ in METRICS] + [k + "50" for k, *_ in METRICS]
COLUMNS = [c for _, c, *_ in METRICS] + [c + "_p50" for _, c, *_ in METRICS]


class _Failed:
    def __init__(self, error):
        self.error = error
        self.rows = []


class Results:
    def __init__(self, transports, stat="p50"):
        self.suffix = STATS[stat]  # which statistic of each run the tables and plots use
        self.order = [t.name for t in transports]
        self.data = {t: {} for t in self.order}  # transport -> size -> metric -> [values]
        self.failures = {t: [] for t in self.order}  # transport -> [(rep, error)]
        self.runs = {t: 0 for t in self.order}
        self.limits = {"lat": {}, "bw": {}, "errors": []}  # perftest, where it ran
        self.records = []

    def add(self, transport, rep, run):
        self.runs[transport] += 1
        if run.error:
            self.failures[transport].append((rep, run.error))
            self.records.append([transport, "", rep] + [""] * len(COLUMNS) + [run.error])
            return
        for size, lat, bw, mr, lat50, bw50 in run.rows:
            values = [lat, bw, mr, lat50, bw50, bw50 / size]
            per = self.data[transport].setdefault(size, {k: [] for k in KEYS})
            for k, v in zip(KEYS, values):
                per[k].append(v)
            self.records.append([transport, size, rep] + values + [""])

    @classmethod
    def from_csv(cls, path, transports, stat="p50"):
        """The results a run wrote, read back (bench/compare --replot)."""
        r = cls(transports, stat)
        with open(path, newline="") as f:
            for row in csv.DictReader(f):
                t = row["transport"]
                if t.startswith("perftest"):
                    key, col = ("lat", "latency_us") if "lat" in t else ("bw", "bandwidth_MBs")
                    r.limits[key][int(row["size"])] = float(row[col])
                    continue
                if t not in r.data:
                    continue
                if row["error"]:
                    r.add(t, int(row["rep"]), _Failed(row["error"]))
                    continue
                per = r.data[t].setdefault(int(row["size"]), {k: [] for k in KEYS})
                for key, col in zip(KEYS, COLUMNS):
                    per[key].append(float(row[col]))
                r.records.append([row[k] for k in row])
        for t in r.order:  # runs that gave a table: one per repetition seen
            reps = {int(x[2]) for x in r.records if x[0] == t and not x[-1]}
            r.runs[t] += len(reps)
        return r

    def write_csv(self, path):
        with open(path, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["transport", "size", "rep"] + COLUMNS + ["error"])
            w.writerows(self.records)
            blank = [""] * (len(COLUMNS) - 1)
            for size in sorted(self.limits["lat"]):
                w.writerow(["perftest ib_send_lat", size, 1, self.limits["lat"][size]] + blank + [""])
            for size in sorted(self.limits["bw"]):
                w.writerow(["perftest ib_read_bw", size, 1, "", self.limits["bw"][size]] +
                           blank[1:] + [""])

    def measured(self):
        """Transports with at least one table, in run order."""
        return [t for t in self.order if self.data[t]]

    def failed(self):
        """Transports with a failed run: name -> (failed runs, runs, first error)."""
        return {t: (len(f), self.runs[t], f[0][1]) for t, f in self.failures.items() if f}

    def sizes(self):
        return sorted({s for t in self.order for s in self.data[t]})

    def series(self, transport, key):
        """(sizes, medians, minima, maxima) of one metric."""
        sizes = sorted(self.data[transport])
        vals = [self.data[transport][s][key + self.suffix] for s in sizes]
        return (sizes, [statistics.median(v) for v in vals], [min(v) for v in vals],
                [max(v) for v in vals])

    def median(self, transport, size, key):
        v = self.data[transport].get(size, {}).get(key + self.suffix)
        return statistics.median(v) if v else None

    def spread(self, transport, size, key):
        v = self.data[transport].get(size, {}).get(key + self.suffix)
        return (min(v), max(v)) if v else None
