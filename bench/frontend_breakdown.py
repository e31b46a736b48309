"""Where a PyTorch-frontend call spends its time on the GPU (docs/benchmarks.md, 2026-12-03):

    python3 bench/frontend_breakdown.py        # CUDA machine, luminal package installed

examples/dlrm's DLRM at the seed shape (batch 2048, one index per bag) through luminal.compile
with each DLRM-rule alternative, the same program's C++ run alone (no Python checks), the kernel
time (torch.profiler / CUPTI), dynamo's own floor (a backend returning a cached tensor),
luminal.backend, and the Kaggle shape's 26 tables (rows capped: the host path does not depend on
them). Per row: host enqueue per call, pipelined time per call (2000 calls, one sync) and
latency (call + sync, p50 / mean of 300).
"""
import os
import sys
import time

import torch

import luminal

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "examples", "dlrm"))
import export as ex  # noqa: E402


def run(label, fn, n=2000):
    for _ in range(50):
        fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    t1 = time.perf_counter()
    torch.cuda.synchronize()
    t2 = time.perf_counter()
    lat = []
    for _ in range(300):
        a = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        lat.append(time.perf_counter() - a)
    lat.sort()
    print(f"{label}: enqueue {1e6 * (t1 - t0) / n:.2f} us/call, pipelined {1e6 * (t2 - t0) / n:.2f} us/call, "
          f"latency p50 {1e6 * lat[150]:.2f} mean {1e6 * sum(lat) / len(lat):.2f}", flush=True)


def main():
    cfg = ex.DlrmConfig(4, [10, 20, 30], [13, 8, 4], [10, 8, 1], 2048, 1, 0)
    model = ex.DLRM(cfg).cuda().eval()
    inputs = ex.make_inputs(cfg, "cuda")
    stream = torch.cuda.current_stream().cuda_stream
    with torch.no_grad():
        for alt in ("mega", "fused_sparse", "none"):
            aot = luminal.compile(model, inputs, alternative=alt)
            run(f"aot {alt} ({aot.stats()['kernels']} kernels)", lambda: aot(*inputs))
            prog = aot._program
            run(f"  C++ run only ({alt})", lambda: prog.run(stream))
        aot = luminal.compile(model, inputs)
        from torch.profiler import ProfilerActivity, profile
        with profile(activities=[ProfilerActivity.CUDA]) as p:
            for _ in range(100):
                aot(*inputs)
            torch.cuda.synchronize()
        print(p.key_averages().table(sort_by="cuda_time_total", row_limit=8))
        out = model(*inputs)
        torch._dynamo.reset()
        floor = torch.compile(model, backend=lambda gm, example: (lambda *a: (out,)))
        run("dynamo floor (backend returns a cached tensor)", lambda: floor(*inputs))
        torch._dynamo.reset()
        be = torch.compile(model, backend=luminal.backend)
        run("luminal.backend", lambda: be(*inputs))
        torch._dynamo.reset()
        be2 = torch.compile(model, backend=luminal.backend, options={"outputs": "reuse"})
        run("luminal.backend outputs=reuse", lambda: be2(*inputs))
        kc = ex.from_preset("kaggle", 2048, 1000)
        km = ex.DLRM(kc).cuda().eval()
        ki = ex.make_inputs(kc, "cuda")
        kaot = luminal.compile(km, ki)
        print("kaggle rules", kaot.stats()["rules"], "kernels", kaot.stats()["kernels"])
        run("kaggle aot", lambda: kaot(*ki))
        kp = kaot._program
        run("kaggle C++ run only", lambda: kp.run(stream))


if __name__ == "__main__":
    main()
