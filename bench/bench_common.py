"""Timing helpers shared by bench.py and bench_sweep.py (the three timings of DESIGN.md section 8)."""
import statistics
import time

import torch


def _stats(samples_us):
    s = sorted(samples_us)
    return {"mean_us": statistics.fmean(s), "p50_us": s[len(s) // 2],
            "p99_us": s[min(len(s) - 1, int(len(s) * 0.99))], "n": len(s)}


def time_three(fn, warmup=50, iters=500):
    """(1) CUDA events around each call, back to back; (2) latency: host clock around one call
    plus sync; (3) pipelined: iters calls, one sync, time per call."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
    for s, e in zip(starts, ends):
        s.record()
        fn()
        e.record()
    torch.cuda.synchronize()
    events = [s.elapsed_time(e) * 1e3 for s, e in zip(starts, ends)]
    lat = []
    for _ in range(iters):
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        lat.append((time.perf_counter() - t0) * 1e6)
    t0 = time.perf_counter()
    for _ in range(iters):
        fn()
    torch.cuda.synchronize()
    pipe = (time.perf_counter() - t0) * 1e6 / iters
    return {"events": _stats(events), "latency": _stats(lat), "pipelined": {"mean_us": pipe, "n": iters}}


def time_cpu(fn, warmup=5, iters=20):
    """The three timings' shape for CPU smoke runs: host clock only (events = latency)."""
    for _ in range(warmup):
        fn()
    lat = []
    for _ in range(iters):
        t0 = time.perf_counter()
        fn()
        lat.append((time.perf_counter() - t0) * 1e6)
    t0 = time.perf_counter()
    for _ in range(iters):
        fn()
    pipe = (time.perf_counter() - t0) * 1e6 / iters
    return {"events": _stats(lat), "latency": _stats(lat), "pipelined": {"mean_us": pipe, "n": iters}}


def summarize(rows, key="latency"):
    """name -> mean latency in us for rows without errors."""
    return {r["name"]: r[key]["mean_us"] for r in rows if "error" not in r}


def floors(cfg, inputs, iters=2000):
    """Physical floors on this machine: an empty launch + sync, a 1-kernel CUDA graph + sync, and the
    H2D upload of this batch's inputs (pinned) + sync."""
    x = torch.zeros(1, device="cuda")

    def tiny():
        x.add_(1.0)

    out = {}
    lat = time_three(tiny, 100, iters)["latency"]
    out["one tiny kernel launch + sync (torch)"] = lat["mean_us"]
    g = torch.cuda.CUDAGraph()
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        tiny()
    torch.cuda.synchronize()
    with torch.cuda.graph(g):
        tiny()
    out["1-kernel CUDA graph launch + sync"] = time_three(g.replay, 100, iters)["latency"]["mean_us"]
    dense_x, indices, _ = inputs
    host = [dense_x.cpu().pin_memory()] + [i.to(torch.int32).cpu().pin_memory() for i in indices]
    dev = [h.to("cuda") for h in host]

    def h2d():
        for d, h in zip(dev, host):
            d.copy_(h, non_blocking=True)

    nbytes = sum(h.numel() * h.element_size() for h in host)
    out[f"H2D of the inputs ({nbytes // 1024} KiB pinned) + sync"] = time_three(h2d, 50, iters // 2)["latency"]["mean_us"]
    return out
