#!/usr/bin/env python3
"""One AOTInductor row for bench.py, in its own process: AOTInductor has segfaulted on the lent
H200 (torch 2.11), and a crash here must not take the whole benchmark down.
argv: config JSON, out dir, warmup, iters, weights path, precision.
Prints one JSON line: {"setup_s", "max_abs_diff", "spearman", "events", "latency", "pipelined"}."""
import json
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_rows as tr  # noqa: E402
from accuracy import compare  # noqa: E402
from bench_common import time_three  # noqa: E402
from torch_rows import dlrm_export  # noqa: E402


def main():
    cfg = dlrm_export.DlrmConfig(**json.loads(sys.argv[1]))
    out_dir, warmup, iters, weights, precision = sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5], sys.argv[6]
    with torch.no_grad():  # the reference: fp32 eager, exact matmuls
        base = tr.load_model(cfg, weights, "cuda", progress=lambda s: None)
        ref = base(*tr.device_inputs(cfg, "cuda")).float().cpu().numpy()
    with tr.precision_mode(precision), torch.no_grad():
        model = tr.cast_model(base, precision)
        inputs = tr.cast_inputs(tr.device_inputs(cfg, "cuda"), precision)
        t0 = time.perf_counter()
        ep = torch.export.export(model, inputs)
        pkg = torch._inductor.aoti_compile_and_package(ep, package_path=os.path.join(out_dir, "dlrm_aoti.pt2"))
        runner = torch._inductor.aoti_load_package(pkg)
        out = runner(*inputs)
        torch.cuda.synchronize()
        row = {"setup_s": time.perf_counter() - t0}
        row.update(compare(out.float().cpu().numpy(), ref))
        row.update(time_three(lambda: runner(*inputs), warmup, iters))
    print(json.dumps(row))


if __name__ == "__main__":
    main()
