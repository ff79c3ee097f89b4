"""Per-message cost with the waiting taken out.

A process that spins on its completion queue runs a poll loop a number of times that
depends on how fast its peer answers, which on a shared machine (or under valgrind) is
anything but repeatable. The instructions one role (client, server) executes inside its
measured loop are modelled as

    I = c + a * N + b * P

with N the round trips and P the poll-loop iterations (calls of the loop's poll
function), fitted by least squares over runs of different N, whose P varies by itself.
a is the cost of a round trip's work, b of one poll-loop iteration that found nothing;
a round trip's cost is reported as a + b: its work plus the one poll that finds the
peer's answer, the least any program spinning on a queue can do."""


def solve(rows, ys):
    """Least squares: the x minimising |rows x - ys|, by the normal equations."""
    n = len(rows[0])
    m = [[sum(r[i] * r[j] for r in rows) for j in range(n)] +
         [sum(r[i] * y for r, y in zip(rows, ys))] for i in range(n)]
    for col in range(n):
        piv = max(range(col, n), key=lambda k: abs(m[k][col]))
        if abs(m[piv][col]) < 1e-9:
            raise ValueError("the runs do not separate the per-message cost from the "
                             "waiting (too few runs, or the same N and polls in each)")
        m[col], m[piv] = m[piv], m[col]
        for k in range(n):
            if k != col:
                f = m[k][col] / m[col][col]
                m[k] = [x - f * y for x, y in zip(m[k], m[col])]
    return [m[i][n] / m[i][i] for i in range(n)]


def one_role(points):
    """points: (round trips N, poll iterations P, instructions I) per run of one role.
    Returns (a, b, worst residual as a fraction of the run's instructions).

    A side that never waits (a sender whose peer keeps up: each poll finds completions)
    polls the same number of times for the same N in every run; then P tells nothing
    apart from N, and I = c + a * N is fitted, a counting those polls, b 0."""
    ys = [float(i) for _, _, i in points]
    ratios = [p / n for n, p, _ in points]
    if max(ratios) - min(ratios) <= 1e-9 * max(max(ratios), 1.0):
        rows = [[1.0, float(n), 0.0] for n, _, _ in points]
        (c, a), b = solve([r[:2] for r in rows], ys), 0.0
    else:
        rows = [[1.0, float(n), float(p)] for n, p, _ in points]
        c, a, b = solve(rows, ys)
    worst = max(abs(c + a * r[1] + b * r[2] - y) / max(y, 1.0) for r, y in zip(rows, ys))
    return a, b, worst


def per_round_trip(points):
    """points: (role, N, P, I) per process of every run. Returns (a, b, worst residual),
    a and b the mean over the roles (each side's cost of a round trip)."""
    roles = sorted({p[0] for p in points})
    fits = [one_role([p[1:] for p in points if p[0] == r]) for r in roles]
    return (sum(f[0] for f in fits) / len(fits), sum(f[1] for f in fits) / len(fits),
            max(f[2] for f in fits))
