#!/usr/bin/env python3
"""Production DLRM sweep: Kaggle and MLPerf x batch {256, 2048, 16384} x precision {fp32, tf32, bf16,
int8}: luminal (`dlrm run --precision P --bench --json`) beside PyTorch at the same precision (eager,
CUDA-graph replay of eager, torch.compile reduce-overhead / max-autotune where the budget allows; int8
cells show PyTorch bf16, labelled). Per cell: the three timings, samples/s, the roofline floor, max abs
diff and Spearman vs the fp32 PyTorch `expected`, the winner. Writes production.md/.json/.png.

    python3 bench/bench_production.py --dlrm .gpu/examples/dlrm/dlrm --out $OUT/production   # GPU
    python3 bench/bench_production.py --dry-run          # the plan and estimate only
    python3 bench/bench_production.py --cpu-smoke --out /tmp/smoke   # tiny shapes, CPU, no GPU needed
"""
import argparse
import dataclasses
import gc
import os
import shlex
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import luminal_rows  # noqa: E402
import production_plan as pp  # noqa: E402
import production_report  # noqa: E402
import roofline  # noqa: E402
import torch_rows as tr  # noqa: E402
from accuracy import compare  # noqa: E402
from bench_common import time_cpu, time_three  # noqa: E402
from torch_rows import dlrm_export, sst  # noqa: E402


def configs(s: pp.Settings, args):
    """preset -> {batch: DlrmConfig}."""
    out = {}
    for p in s.presets:
        out[p] = {b: dlrm_export.from_preset(p, b, s.max_rows.get(p), dist=args.dist, alpha=args.alpha)
                  for b in s.batches}
    return out


def floor_for(cfg, precision):
    """The roofline floor of a config, with unique gathered rows counted from its inputs."""
    _, indices, _ = dlrm_export.make_inputs(cfg)
    nnz = sum(len(i) for i in indices)
    uniq = sum(len(torch.unique(i)) for i in indices)
    return roofline.floor(dataclasses.asdict(cfg), cfg.batch, precision, nnz, uniq)


def export_preset(preset, cfgs, work, log):
    """Weights once per preset, inputs once per batch; returns (weights path, {batch: inputs path})."""
    d = os.path.join(work, preset)
    weights, inputs = None, {}
    for b, cfg in cfgs.items():
        weights, inputs[b] = dlrm_export.export(cfg, d, weights_path=weights,
                                                inputs_name=f"inputs_b{b}.safetensors", progress=log)
    return weights, inputs


def timed_row(backend, fn, ref, batch, s, device, label=None, setup_s=0.0):
    """Times fn (three methods) and checks its output against ref; a failure is an error row."""
    row = {"backend": backend, "setup_s": setup_s}
    if label:
        row["label"] = label
    try:
        out = fn()
        row.update(compare(out.float().cpu().numpy(), ref))
        timer = time_three if device == "cuda" else time_cpu
        row.update(timer(fn, s.warmup, s.iters))
    except Exception as e:  # noqa: BLE001 - a failing backend is a table cell, not a crash
        return {"backend": backend, "label": label, "error": tr.error_text(e)}
    return row


def torch_cells(preset, cfgs, weights, inputs, plan, s, device, log, deadline):
    """PyTorch rows: {(batch, torch precision): [rows]} for every torch precision the cells need."""
    rows = {}
    base = tr.load_model(cfgs[s.batches[0]], weights, device, log)
    for tp in dict.fromkeys(pp.TORCH_PRECISION[q] for q in s.precisions):
        with tr.precision_mode(tp), torch.no_grad():
            model = tr.cast_model(base, tp)
            for b in s.batches:
                ref = _expected(inputs[b])
                x = tr.cast_inputs(tr.device_inputs(cfgs[b], device), tp)
                r = [timed_row("pytorch eager", lambda m=model, x=x: m(*x), ref, b, s, device)]
                if device == "cuda":
                    t0 = time.perf_counter()
                    try:
                        rep = tr.cuda_graph(model, x)
                        r.append(timed_row("CUDA-graph replay", rep, ref, b, s, device,
                                           setup_s=time.perf_counter() - t0))
                    except Exception as e:  # noqa: BLE001
                        r.append({"backend": "CUDA-graph replay", "error": tr.error_text(e)})
                    for (p, cb, cp, mode) in plan["compiles"]:
                        if (p, cb, cp) != (preset, b, tp):
                            continue
                        if time.perf_counter() + pp.COST[mode] > deadline:
                            r.append({"backend": f"torch.compile {mode}", "error": "skipped at run time: it "
                                      "would pass --deadline-s"})
                            log(f"[torch] skipped torch.compile {mode} {preset} b{b} {tp}: deadline")
                            continue
                        r.append(_compile_row(model, x, mode, ref, b, s))
                rows[(b, tp)] = r
                log(f"[torch] {preset} b{b} {tp}: " + ", ".join(
                    f"{x['backend']} {x['latency']['mean_us']:.1f} us" if "latency" in x else f"{x['backend']} failed"
                    for x in r))
            del model
        gc.collect()
    del base
    torch._dynamo.reset()  # compiled graphs hold the models: free them before the next luminal runs
    gc.collect()
    if device == "cuda":
        torch.cuda.empty_cache()
    return rows


def _compile_row(model, x, mode, ref, b, s):
    t0 = time.perf_counter()
    try:
        fn = tr.compiled(model, x, mode)
    except Exception as e:  # noqa: BLE001
        return {"backend": f"torch.compile {mode}", "error": tr.error_text(e)}
    return timed_row(f"torch.compile {mode}", fn, ref, b, s, "cuda", setup_s=time.perf_counter() - t0)


def _expected(inputs_path):
    arr, _ = sst.open_tensor(inputs_path, "expected")
    return arr.copy()


def run_preset(preset, cfgs, plan, s, args, log):
    """Every cell of one preset: export, luminal processes (before PyTorch takes GPU memory), PyTorch."""
    weights, inputs = export_preset(preset, cfgs, args.work, log)
    lum = {}
    for b in s.batches:
        for q in s.precisions:
            if args.dlrm:
                js = os.path.join(args.work, preset, f"luminal_b{b}_{q}.json")
                lum[(b, q)] = luminal_rows.run(args.dlrm, weights, inputs[b], q, js, s.warmup, s.iters,
                                               args.device, timeout=120, extra=shlex.split(args.luminal_args))
            else:
                lum[(b, q)] = {"backend": "luminal", "error": "no --dlrm binary given"}
            r = lum[(b, q)]
            log(f"[luminal] {preset} b{b} {q}: " + (r.get("error") or f"{r['latency']['mean_us']:.1f} us"))
    trows = torch_cells(preset, cfgs, weights, inputs, plan, s, args.device, log, args.deadline_at)
    cells = []
    for b in s.batches:
        for q in s.precisions:
            tp = pp.TORCH_PRECISION[q]
            label = None if tp == q else (f"PyTorch {tp}, same accuracy" if q == "tf32x3" else
                                           f"PyTorch {tp}, no int8 path")
            rows = [lum[(b, q)]] + [dict(r, label=label) if label else r for r in trows[(b, tp)]]
            cells.append({"preset": preset, "batch": b, "precision": q, "floor": floor_for(cfgs[b], q),
                          "rows": rows, "config": dataclasses.asdict(cfgs[b])})
    return cells


def settings_from(args):
    s = pp.Settings()
    if args.cpu_smoke:
        s = dataclasses.replace(s, batches=(8, 32), warmup=1, iters=3, max_rows={"kaggle": 1000, "mlperf": 1000},
                                compile_batches=())
    if args.quick:
        s = pp.quick(s)
    kw = {k: tuple(v) for k, v in (("presets", args.presets), ("batches", args.batches),
                                   ("precisions", args.precisions)) if v}
    if args.iters:
        kw["iters"] = args.iters
    if args.budget_s:
        kw["budget_s"] = args.budget_s
    rows = dict(s.max_rows)
    for p, v in (("kaggle", args.max_rows_kaggle), ("mlperf", args.max_rows_mlperf)):
        if v is not None:
            rows[p] = v or None
    return dataclasses.replace(s, max_rows=rows, **kw)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dlrm", help="the dlrm binary (luminal rows are error cells without it)")
    p.add_argument("--luminal-args", default="", help="more `dlrm run` arguments, e.g. '--sparse fused'")
    p.add_argument("--out", default="bench/results/production")
    p.add_argument("--work", default="/tmp/dlrm_production", help="where the exports go")
    p.add_argument("--presets", nargs="*", choices=pp.PRESETS)
    p.add_argument("--batches", nargs="*", type=int)
    p.add_argument("--precisions", nargs="*", choices=pp.ALL_PRECISIONS)
    p.add_argument("--iters", type=int)
    p.add_argument("--budget-s", type=float, help="device seconds the plan may use (default 450)")
    p.add_argument("--max-rows-kaggle", type=int, help="cap Kaggle tables (0: full)")
    p.add_argument("--max-rows-mlperf", type=int, help="cap MLPerf tables (0: full; default 2000000)")
    p.add_argument("--dist", choices=["uniform", "powerlaw"], default="uniform")
    p.add_argument("--alpha", type=float, default=1.05)
    p.add_argument("--deadline-s", type=float, default=540.0,
                   help="skip a planned torch.compile that would end after this many seconds of the run")
    p.add_argument("--quick", action="store_true", help="fewer iterations, smaller tables, no batch 256")
    p.add_argument("--dry-run", action="store_true", help="print the plan and exit")
    p.add_argument("--cpu-smoke", action="store_true", help="tiny tables and batches on the CPU")
    a = p.parse_args(argv)
    a.device = "cpu" if a.cpu_smoke else "cuda"
    return a


def main(argv=None):
    args = parse_args(argv)
    s = settings_from(args)
    cfgs = configs(s, args)
    plan = pp.make_plan(s, {p: dataclasses.asdict(c[s.batches[0]]) for p, c in cfgs.items()})
    print(pp.describe(plan), flush=True)
    if args.dry_run:
        return 0
    if args.device == "cuda" and not torch.cuda.is_available():
        print("[bench] no CUDA device: use --cpu-smoke or --dry-run here")
        return 2
    t0 = time.perf_counter()

    def log(msg):
        print(f"[{time.perf_counter() - t0:6.1f} s] {msg}", flush=True)

    result = {"plan": plan, "device": torch.cuda.get_device_name() if args.device == "cuda" else "cpu",
              "torch": torch.__version__, "cells": []}
    args.deadline_at = t0 + args.deadline_s
    for p in s.presets:
        result["cells"] += run_preset(p, cfgs[p], plan, s, args, log)
        production_report.write_all(result, args.out)  # a run killed later still leaves these cells
    result["wall_s"] = time.perf_counter() - t0
    print(production_report.write_all(result, args.out))
    print(f"[bench] done in {result['wall_s']:.0f} s (estimated {plan['total_s']:.0f} s); {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
