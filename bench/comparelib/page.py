"""The Markdown page of a bench/compare run: how it was run (command, commit, machine
load), the figures, the transports that failed with their errors, and per size the
median and spread of every transport and the ratios asked for."""
from .results import METRICS

STAT_WORDS = {
    "p50": "each run's median iteration (latency) or window (bandwidth, message rate)",
    "mean": "each run's mean over its iterations or windows (as OSU's benchmarks report)",
}


def fmt(v):
    if v is None:
        return "-"
    if v >= 100:
        return f"{v:.0f}"
    if v >= 10:
        return f"{v:.1f}"
    if v >= 1:
        return f"{v:.2f}"
    return f"{v:.3g}"


def cell(results, t, size, key):
    m = results.median(t, size, key)
    if m is None:
        return "-"
    lo, hi = results.spread(t, size, key)
    return f"{fmt(m)} ({fmt(lo)}–{fmt(hi)})" if len(results.data[t][size][key + results.suffix]) > 1 else fmt(m)


def ratio(results, a, b, size, key):
    x, y = results.median(a, size, key), results.median(b, size, key)
    return f"{x / y:.2f}" if x and y else "-"


def metric_table(results, key, ratios):
    _, _, label, unit, higher = next(m for m in METRICS if m[0] == key)
    names = results.measured()
    pairs = [(a, b) for a, b in ratios if a in names and b in names]
    better = "higher" if higher else "lower"
    out = [f"### {label} ({unit}; {better} is better)", ""]
    out.append("| bytes | " + " | ".join(names + [f"{a} / {b}" for a, b in pairs]) + " |")
    out.append("|" + " --- |" * (1 + len(names) + len(pairs)))
    for size in results.sizes():
        cells = [cell(results, t, size, key) for t in names]
        cells += [ratio(results, a, b, size, key) for a, b in pairs]
        out.append(f"| {size} | " + " | ".join(cells) + " |")
    return out


def write(path, results, context, figures, transports, ratios):
    out = [f"# {context['title']}", ""]
    out += [
        f"- command: `{context['command']}`",
        f"- commit: `{context['commit']}`; {context['date']}",
        f"- machine: {context['machine']}",
        f"- load average before / after: {context['load_before']} / {context['load_after']}"
        + (" (not a quiet machine: compare ratios within this run only)"
           if context["busy"] else ""),
        f"- {context['reps']} repetition(s), interleaved ({' '.join(results.order)}, then again); "
        f"each cell: median (min–max) over the repetitions of {STAT_WORDS[context['stat']]}",
        f"- benchmark: `{context['program']}`",
        "",
    ]
    for name in figures.values():
        out += [f"![{name}]({name})", ""]
    failed = results.failed()
    if failed:
        out += ["## Failed", "", "| transport | failed runs | error (first) |", "| --- | --- | --- |"]
        for t, (n, runs, err) in failed.items():
            out.append(f"| {t} | {n} of {runs} | {err.replace('|', '/')} |")
        out.append("")
    for e in results.limits.get("errors", []):
        out += [f"perftest failed: {e}", ""]
    out += ["## Per size", ""]
    for key, *_ in METRICS:
        out += metric_table(results, key, ratios) + [""]
    out += ["## How each transport ran", "", "| transport | what | mpirun arguments |",
            "| --- | --- | --- |"]
    for t in transports:
        out.append(f"| {t.name} | {t.what} | `{' '.join(t.mpirun_args())}` |")
    if context.get("replotted"):
        out += ["", f"Plots and page drawn again from results.csv: `{context['replotted']}`."]
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")
