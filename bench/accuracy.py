"""Accuracy of a mode against the fp32 PyTorch output: max abs diff and Spearman rank correlation of
the predictions (numpy only: average ranks for ties, then Pearson of the ranks, as scipy does)."""
import numpy as np


def rankdata(x):
    """1-based ranks of x, ties sharing their average rank."""
    x = np.asarray(x, dtype=np.float64).ravel()
    order = np.argsort(x, kind="mergesort")
    xs = x[order]
    # Runs of equal values: each run gets the mean of the positions it spans.
    starts = np.r_[0, np.flatnonzero(xs[1:] != xs[:-1]) + 1]
    ends = np.r_[starts[1:], len(xs)]
    avg = (starts + ends + 1) / 2.0  # mean of positions start+1 .. end
    ranks = np.empty(len(x))
    ranks[order] = np.repeat(avg, ends - starts)
    return ranks


def spearman(a, b):
    """Spearman rank correlation; NaN when either side is constant or holds a NaN."""
    a = np.asarray(a, dtype=np.float64).ravel()
    b = np.asarray(b, dtype=np.float64).ravel()
    if a.shape != b.shape:
        raise ValueError(f"[bench] spearman: shapes {a.shape} vs {b.shape}")
    if len(a) < 2 or np.isnan(a).any() or np.isnan(b).any():
        return float("nan")
    ra, rb = rankdata(a), rankdata(b)
    ra -= ra.mean()
    rb -= rb.mean()
    den = np.sqrt((ra * ra).sum() * (rb * rb).sum())
    return float((ra * rb).sum() / den) if den > 0 else float("nan")


def compare(out, ref):
    """{"max_abs_diff", "spearman"} of predictions `out` against the reference `ref`."""
    o = np.asarray(out, dtype=np.float64).ravel()
    r = np.asarray(ref, dtype=np.float64).ravel()
    if o.shape != r.shape:
        raise ValueError(f"[bench] compare: output has {o.size} values, reference {r.size}")
    diff = np.abs(o - r)
    return {"max_abs_diff": float(np.nan if np.isnan(diff).any() else diff.max()), "spearman": spearman(o, r)}
