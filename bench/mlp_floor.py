#!/usr/bin/env python3
"""The cuBLAS floor of a DLRM's MLPs: PyTorch Linear(+ReLU) chains only (no embeddings, no
interaction), CUDA-graph replayed, per precision and batch. What any DLRM built on cuBLAS matmuls
cannot beat; docs/benchmarks.md puts it beside the full-model rows.

    python3 bench/mlp_floor.py --batches 2048,16384 --json /tmp/mlp_floor.json
"""
import argparse
import json

import torch

PRESETS = {  # bottom and top MLP widths (the top input is d + n(n-1)/2 with n = 27)
    "kaggle": ([13, 512, 256, 64, 16], [367, 512, 256, 1]),
    "mlperf": ([13, 512, 256, 128], [479, 1024, 1024, 512, 256, 1]),
}
DTYPES = {"fp32": torch.float32, "tf32": torch.float32, "bf16": torch.bfloat16}


def mlp(widths, dtype):
    layers = []
    for i in range(len(widths) - 1):
        layers += [torch.nn.Linear(widths[i], widths[i + 1]), torch.nn.ReLU()]
    return torch.nn.Sequential(*layers).cuda().to(dtype).eval()


def pad16(n):
    return (n + 15) // 16 * 16


def fp8_mlp(widths):
    """The same MLP as FP8 GEMMs (torch._scaled_mm: e4m3 weights and activations, per-tensor
    scales, bf16 output + bias, ReLU, requantized to e4m3 for the next layer); widths padded to
    multiples of 16 as FP8 GEMMs need. The floor an int8/fp8 mode on cuBLASLt could reach."""
    fp8 = torch.float8_e4m3fn
    one = torch.ones((), device="cuda")
    layers = []
    for i in range(len(widths) - 1):
        w = (torch.randn(pad16(widths[i + 1]), pad16(widths[i]), device="cuda") * 0.05).to(fp8)
        b = torch.zeros(pad16(widths[i + 1]), device="cuda", dtype=torch.bfloat16)
        layers.append((w, b))

    def run(x):
        for i, (w, b) in enumerate(layers):
            y = torch._scaled_mm(x, w.t(), scale_a=one, scale_b=one, bias=b, out_dtype=torch.bfloat16)
            x = torch.relu(y).to(fp8) if i + 1 < len(layers) else y
        return x
    return run


def replay_us(fn, iters):
    """Mean microseconds per CUDA-graph replay of fn, events around `iters` back-to-back replays."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn()
    for _ in range(10):
        g.replay()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(iters):
        g.replay()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) * 1e3 / iters


def flops(widths, batch):
    return 2 * batch * sum(widths[i] * widths[i + 1] for i in range(len(widths) - 1))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--batches", default="256,2048,16384")
    p.add_argument("--iters", type=int, default=200)
    p.add_argument("--json", default="")
    a = p.parse_args()
    rows = []
    torch.manual_seed(0)
    with torch.no_grad():
        for preset, (bot, top) in PRESETS.items():
            for prec, dtype in DTYPES.items():
                torch.backends.cuda.matmul.allow_tf32 = prec == "tf32"
                b_mlp, t_mlp = mlp(bot, dtype), mlp(top, dtype)
                for batch in map(int, a.batches.split(",")):
                    xb = torch.randn(batch, bot[0], device="cuda", dtype=dtype)
                    xt = torch.randn(batch, top[0], device="cuda", dtype=dtype)
                    us = replay_us(lambda: (b_mlp(xb), t_mlp(xt)), a.iters)
                    gf = (flops(bot, batch) + flops(top, batch)) / 1e9
                    rows.append({"preset": preset, "precision": prec, "batch": batch, "us": us,
                                 "gflop": gf, "tflops": gf / us * 1e3})
                    print(f"{preset:7s} {prec:5s} batch {batch:6d}: {us:9.1f} us  "
                          f"({gf:.2f} GFLOP, {rows[-1]['tflops']:.0f} TFLOP/s)", flush=True)
        for preset, (bot, top) in PRESETS.items():
            try:
                b_mlp, t_mlp = fp8_mlp(bot), fp8_mlp(top)
                for batch in map(int, a.batches.split(",")):
                    xb = torch.randn(batch, pad16(bot[0]), device="cuda").to(torch.float8_e4m3fn)
                    xt = torch.randn(batch, pad16(top[0]), device="cuda").to(torch.float8_e4m3fn)
                    us = replay_us(lambda: (b_mlp(xb), t_mlp(xt)), a.iters)
                    gf = (flops(bot, batch) + flops(top, batch)) / 1e9
                    rows.append({"preset": preset, "precision": "fp8", "batch": batch, "us": us,
                                 "gflop": gf, "tflops": gf / us * 1e3})
                    print(f"{preset:7s} fp8   batch {batch:6d}: {us:9.1f} us  "
                          f"({gf:.2f} GFLOP, {rows[-1]['tflops']:.0f} TFLOP/s)", flush=True)
            except (RuntimeError, TypeError) as e:  # no FP8 GEMMs on this device / torch
                print(f"{preset:7s} fp8: not run ({e})", flush=True)
    torch.backends.cuda.matmul.allow_tf32 = False
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
