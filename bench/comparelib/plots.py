"""The three figures of bench/compare: latency, bandwidth and message rate against
message size, log axes, one line per transport (the median over the repetitions, with a
band from the minimum to the maximum), perftest's raw limit dashed where it ran, and the
failed transports named in the legend."""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402

from .results import METRICS  # noqa: E402

LIMIT_LABEL = {"lat": "ib_send_lat (raw verbs limit)", "bw": "ib_read_bw (raw verbs limit)"}


def human_bytes(n, _pos=None):
    for unit, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:g} {unit}"
    return f"{n:g} B"


def figure(results, key, title, path):
    _, _, label, unit, _ = next(m for m in METRICS if m[0] == key)
    fig, ax = plt.subplots(figsize=(7.5, 4.6), dpi=80)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    handles = []
    for i, t in enumerate(results.order):
        color = colors[i % len(colors)]
        if results.data[t]:
            sizes, med, lo, hi = results.series(t, key)
            (line,) = ax.plot(sizes, med, marker=".", color=color, label=t, linewidth=1.4)
            ax.fill_between(sizes, lo, hi, color=color, alpha=0.2, linewidth=0)
            handles.append(line)
        else:
            handles.append(Line2D([], [], color=color, linestyle=":", label=f"{t}: failed"))
    limit = results.limits.get(key) or {}
    if limit:
        sizes = sorted(limit)
        (line,) = ax.plot(sizes, [limit[s] for s in sizes], "k--", linewidth=1.2,
                          label=LIMIT_LABEL[key])
        handles.append(line)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(human_bytes))
    ax.xaxis.set_major_locator(matplotlib.ticker.LogLocator(base=4))
    ax.set_xlabel("message size")
    ax.set_ylabel(f"{label} ({unit})")
    ax.set_title(title, fontsize=10)
    ax.grid(True, which="major", alpha=0.4)
    ax.grid(True, which="minor", alpha=0.15)
    ax.legend(handles=handles, fontsize=8, loc="best")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def draw_all(results, out_dir, heading):
    """Writes latency.png, bandwidth.png and msgrate.png; returns their file names."""
    names = {"lat": "latency.png", "bw": "bandwidth.png", "mr": "msgrate.png"}
    titles = {
        "lat": f"latency (half a ping-pong round trip), lower is better\n{heading}",
        "bw": f"bandwidth (window of non-blocking sends), higher is better\n{heading}",
        "mr": f"message rate (window of non-blocking sends), higher is better\n{heading}",
    }
    for key, name in names.items():
        figure(results, key, titles[key], f"{out_dir}/{name}")
    return names
