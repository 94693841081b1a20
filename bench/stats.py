"""Statistics of the figures: a summary (median, min, max, a bootstrap interval of
the median), a figure checked against its target, the work-rate ratio of two sets of
windows (ratio_q) and its bootstrap interval, and the bootstrap quotient of two tools'
extra CPU (extra_quotient)."""

import random
import statistics


def boot_median_ci(xs, n=2000, seed=5):
    """95 % percentile-bootstrap interval of the median of xs."""
    if len(xs) < 3:
        return None
    rnd = random.Random(seed)
    meds = sorted(statistics.median(rnd.choices(xs, k=len(xs))) for _ in range(n))
    return [meds[int(0.025 * n)], meds[int(0.975 * n) - 1]]


def summary(xs):
    xs = [x for x in xs if x is not None]
    if not xs:
        return None
    return {"median": statistics.median(xs), "min": min(xs), "max": max(xs), "n": len(xs),
            "ci95_median": boot_median_ci(xs), "values": xs}


def check(value, target, below=True, ci=None):
    """'met', 'not met', 'unclear' (the 95 % interval straddles the target) or None."""
    if value is None or target is None:
        return None
    ok = value < target if below else value >= target
    if ci is not None and ci[0] < target <= ci[1]:
        return "unclear (met)" if ok else "unclear (not met)"
    return "met" if ok else "not met"


def ratio_q(off, on, q=0.75):
    """The work rate with sampling off over the rate with it on, each taken at its q
    quantile over the windows: the host's interference only ever slows a window down,
    so the faster windows of each kind are the cleaner measure."""
    def at(xs):
        xs = sorted(xs)
        return xs[min(len(xs) - 1, int(q * len(xs)))]
    return at(off) / at(on)


def boot_ratio_ci(off, on, n=2000, seed=7):
    """95 % percentile-bootstrap interval of ratio_q (windows resampled in each kind)."""
    rnd = random.Random(seed)
    vals = sorted(ratio_q(rnd.choices(off, k=len(off)), rnd.choices(on, k=len(on)))
                  for _ in range(n))
    return [vals[int(0.025 * n)], vals[int(0.975 * n) - 1]]


def extra_quotient(cpu, bare, mine, tools, n=2000, seed=11):
    """(median of mine's CPU ratio to bare - 1) / (the same for the cheapest of tools),
    over the repetitions that have every one of them; with a 95 % percentile-bootstrap
    interval (the repetitions resampled, the cheapest taken anew in each resample)."""
    reps = sorted(set(bare).intersection(mine, *tools))
    if len(reps) < 1:
        return None

    def q(rs):
        extra = lambda runs: statistics.median(  # noqa: E731
            cpu(runs[k]) / cpu(bare[k]) for k in rs) - 1
        cheapest = min(extra(t) for t in tools)
        return extra(mine) / cheapest if cheapest > 0 else None
    value = q(reps)
    ci = None
    if len(reps) >= 3:
        rnd = random.Random(seed)
        vals = sorted(v for v in (q(rnd.choices(reps, k=len(reps))) for _ in range(n))
                      if v is not None)
        if len(vals) > n // 2:
            ci = [vals[int(0.025 * len(vals))], vals[int(0.975 * len(vals)) - 1]]
    return {"value": value, "ci95": ci, "repetitions": len(reps)}
