#!/usr/bin/env python3
"""One AOTInductor row for bench.py, in its own process: AOTInductor has segfaulted on the lent
H200 (torch 2.11), and a crash here must not take the whole benchmark down.
Prints one JSON line: {"setup_s", "max_abs_diff", "events", "latency", "pipelined"} or {"error"}."""
import json
import os
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples", "dlrm"))
import export as dlrm_export  # noqa: E402

from bench_common import time_three  # noqa: E402


def main():
    cfg = dlrm_export.DlrmConfig(**json.loads(sys.argv[1]))
    out_dir, warmup, iters = sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    model = dlrm_export.build_model(cfg).cuda()
    inputs = dlrm_export.make_inputs(cfg, "cuda")
    with torch.no_grad():
        ref = model(*inputs).float()
        t0 = time.perf_counter()
        ep = torch.export.export(model, inputs)
        pkg = torch._inductor.aoti_compile_and_package(ep, package_path=os.path.join(out_dir, "dlrm_aoti.pt2"))
        runner = torch._inductor.aoti_load_package(pkg)
        out = runner(*inputs)
        torch.cuda.synchronize()
        row = {"setup_s": time.perf_counter() - t0, "max_abs_diff": (out.float() - ref).abs().max().item()}
        row.update(time_three(lambda: runner(*inputs), warmup, iters))
    print(json.dumps(row))


if __name__ == "__main__":
    main()
