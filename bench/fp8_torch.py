"""PyTorch's FP8 GEMMs at the shapes of bench/fp8_gemm.cpp, for comparison in the same run:
bf16 F.linear (+bias, relu) vs torch._scaled_mm with per-tensor and row-wise (per-row activation x
per-column weight) scales, bf16 out. CUDA events around 20 calls, best of 5, us per call.
    python3 bench/fp8_torch.py [--json FILE]
"""
import argparse
import json

import torch

SHAPES = [("v1 bot 512->256", 16384, 256, 512), ("v1 top 480->1024", 16384, 1024, 480),
          ("v1 top 1024->1024", 16384, 1024, 1024), ("v1 top 1024->512", 16384, 512, 1024),
          ("v1 top 512->256", 16384, 256, 512), ("v1 top 1024->1024 b2048", 2048, 1024, 1024),
          ("v2 cross V 3456->512", 16384, 512, 3456), ("v2 cross W 512->3456", 16384, 3456, 512),
          ("v2 top 3456->1024", 16384, 1024, 3456), ("v2 top 1024->1024", 16384, 1024, 1024)]


def best_us(fn):
    fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    best = float("inf")
    for _ in range(5):
        start.record()
        for _ in range(20):
            fn()
        end.record()
        end.synchronize()
        best = min(best, start.elapsed_time(end) * 1000 / 20)
    return best


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json")
    args = ap.parse_args()
    f8 = torch.float8_e4m3fn
    rows = []
    print(f"{torch.cuda.get_device_name()} torch {torch.__version__}")
    for name, m, n, k in SHAPES:
        x = torch.randn(m, k, device="cuda").abs().bfloat16()
        w = (torch.randn(n, k, device="cuda") / k ** 0.5).bfloat16()
        b = (0.1 * torch.randn(n, device="cuda")).bfloat16()
        forms = {"bf16": lambda: torch.relu(torch.nn.functional.linear(x, w, b))}
        xs_t = (x.abs().max().float() / 448).reshape(())
        ws_t = (w.abs().max().float() / 448).reshape(())
        xq_t, wq_t = (x / xs_t).to(f8), (w / ws_t).to(f8)
        forms["fp8 per-tensor"] = lambda: torch.relu(
            torch._scaled_mm(xq_t, wq_t.t(), xs_t, ws_t, bias=b, out_dtype=torch.bfloat16))
        xs_r = x.abs().amax(1, keepdim=True).float() / 448
        ws_r = w.abs().amax(1, keepdim=True).float() / 448
        xq_r, wq_r = (x / xs_r).to(f8), (w / ws_r).to(f8)
        forms["fp8 row x col"] = lambda: torch.relu(
            torch._scaled_mm(xq_r, wq_r.t(), xs_r, ws_r.t(), bias=b, out_dtype=torch.bfloat16))
        for form, fn in forms.items():
            try:
                us = best_us(fn)
                tflops = 2 * m * n * k / (us * 1e6)
                print(f"{name:26s} {form:26s} {us:10.2f} {tflops:8.1f}")
                rows.append({"shape": name, "form": form, "us": us, "tflops": tflops})
            except Exception as e:  # an unsupported form is a result, not a crash
                print(f"{name:26s} {form:26s} failed: {str(e).splitlines()[0]}")
                rows.append({"shape": name, "form": form, "error": str(e).splitlines()[0]})
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)


if __name__ == "__main__":
    main()
