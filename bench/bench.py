#!/usr/bin/env python3
"""DLRM inference: luminal-cpp against every PyTorch option, side by side, in one process/run.

Rows: PyTorch eager; torch.compile (default, reduce-overhead, max-autotune); AOTInductor;
CUDA-graph replay of eager; luminal graph path and megakernel path (the `dlrm` binary's
--bench --json, same weights and inputs); the same torch model through luminal's PyTorch frontend
(luminal.compile and torch.compile(backend=luminal.backend), when the luminal package imports). Inputs are device-resident for every row.
Three timings per row (docs/benchmarks.md explains them): CUDA events around each call back to
back; latency (host clock around one call + sync); pipelined (N calls, one sync). Plus max abs
error vs eager and setup time. Writes a ranking table, JSON and a PNG plot under --out.

    python bench/bench.py --dlrm build/examples/dlrm/dlrm --out /tmp/bench
"""
import argparse
import dataclasses
import gc
import itertools
import json
import os
import subprocess
import sys
import tempfile
import time
import traceback

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import luminal_rows as lum  # noqa: E402
import roofline  # noqa: E402
import torch_rows as tr  # noqa: E402
from accuracy import compare  # noqa: E402
from frontend_rows import frontend_rows  # noqa: E402
from bench_common import floors, time_cpu, time_three  # noqa: E402
from torch_rows import dlrm_export, sst  # noqa: E402


def pytorch_rows(cfg, model, inputs, args):
    """Yields (name, fn or exception, setup seconds) for every PyTorch backend."""
    dense_x, indices, offsets = inputs

    def eager():
        return model(dense_x, indices, offsets)

    yield "pytorch eager", eager, 0.0
    if args.device == "cpu":
        return  # CPU smoke: eager only
    for mode in ["default", "reduce-overhead", "max-autotune"]:
        if mode in args.skip:
            continue
        t0 = time.perf_counter()
        try:
            torch._dynamo.reset()
            compiled = torch.compile(model, mode=None if mode == "default" else mode)
            for _ in range(3):  # compile + warm the cudagraph trees
                compiled(dense_x, indices, offsets)
            torch.cuda.synchronize()
            yield f"torch.compile {mode}", (lambda c=compiled: c(dense_x, indices, offsets)), time.perf_counter() - t0
        except Exception as e:  # noqa: BLE001 - a failing backend is a table row, not a crash
            yield f"torch.compile {mode}", e, time.perf_counter() - t0
    t0 = time.perf_counter()
    try:
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(3):
                model(dense_x, indices, offsets)
        torch.cuda.current_stream().wait_stream(s)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            static_out = model(dense_x, indices, offsets)

        def replay():
            graph.replay()
            return static_out

        yield "CUDA-graph replay of eager", replay, time.perf_counter() - t0
    except Exception as e:  # noqa: BLE001
        yield "CUDA-graph replay of eager", e, time.perf_counter() - t0


def aoti_row(cfg, args, weights):
    """AOTInductor in a child process (it has segfaulted on the lent machine)."""
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "aoti_row.py")
    cmd = [sys.executable, script, json.dumps(dataclasses.asdict(cfg)), args.out, str(args.warmup),
           str(args.iters), weights, args.precision]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=args.aoti_timeout)
    except subprocess.TimeoutExpired:
        return {"name": "AOTInductor", "error": f"timed out after {args.aoti_timeout} s"}
    if proc.returncode != 0:
        why = f"killed by signal {-proc.returncode}" if proc.returncode < 0 else f"exit {proc.returncode}"
        tail = (proc.stderr.strip().splitlines() or [""])[-1][:200]
        return {"name": "AOTInductor", "error": f"{why}; {tail}"}
    row = json.loads(proc.stdout.strip().splitlines()[-1])
    row["name"] = "AOTInductor"
    return row


def luminal_rows(args, weights, inputs, data_dir):
    """Runs the dlrm binary for both paths at --precision; rows parsed from its --json output."""
    rows = []
    for path, mega in [("luminal graph path", False), ("luminal megakernel", True)]:
        js = os.path.join(data_dir, f"{'mega' if mega else 'graph'}.json")
        r = lum.run(args.dlrm, weights, inputs, args.precision, js, args.warmup, args.iters, args.device,
                    mega=mega)
        r["name"] = path
        rows.append(r)
    return rows


def make_config(args):
    """The benchmarked DlrmConfig: a --preset (optionally capped by --max-rows) or the explicit dims."""
    if args.preset:
        return dlrm_export.from_preset(args.preset, args.batch, args.max_rows, bag=args.bag, seed=args.seed)
    return dlrm_export.DlrmConfig(args.m_spa, args.ln_emb, args.ln_bot, args.ln_top, args.batch, args.bag,
                                  args.seed)


def run(args):
    cfg = make_config(args)
    data_dir = tempfile.mkdtemp(prefix="dlrm_bench_")
    weights, inputs_path = dlrm_export.export(cfg, data_dir)  # the same weights/inputs for every row
    ref = sst.open_tensor(inputs_path, "expected")[0].copy()  # PyTorch fp32 eager (CPU)
    dev = args.device
    base = tr.load_model(cfg, weights, dev)
    rows = []
    with tr.precision_mode(args.precision), torch.no_grad():
        model = tr.cast_model(base, args.precision)
        inputs = tr.cast_inputs(tr.device_inputs(cfg, dev), args.precision)
        # Lazily, one row at a time: each row is timed right after it is built (torch.compile's
        # dynamo.reset() between modes would otherwise invalidate the earlier compiled models).
        rows_in = ((n, f, s, {}) for n, f, s in pytorch_rows(cfg, model, inputs, args))
        if dev == "cuda" and "frontend" not in args.skip:
            rows_in = itertools.chain(rows_in, frontend_rows(model, inputs, args))
        for name, fn, setup, extra in rows_in:
            if isinstance(fn, Exception):
                rows.append({"name": name, "error": tr.error_text(fn)})
                print(f"[bench] {name}: failed: {rows[-1]['error']}", flush=True)
                continue
            if args.precision == "int8":
                name += " [PyTorch bf16: no int8 path]"
            row = {"name": name, "setup_s": setup, **extra}
            row.update(compare(fn().float().cpu().numpy(), ref))
            row.update((time_three if dev == "cuda" else time_cpu)(fn, args.warmup, args.iters))
            rows.append(row)
            print(f"[bench] {name}: {row['latency']['mean_us']:.1f} us", flush=True)
        fl = floors(cfg, inputs) if dev == "cuda" else {}
    del model, base
    torch._dynamo.reset()  # compiled graphs hold the model: free it before luminal loads its copy
    gc.collect()
    if dev == "cuda":
        torch.cuda.empty_cache()
    if "aoti" not in args.skip and dev == "cuda":
        rows.append(aoti_row(cfg, args, weights))
        print(f"[bench] AOTInductor: {rows[-1].get('error') or rows[-1]['latency']['mean_us']}", flush=True)
    rows += luminal_rows(args, weights, inputs_path, data_dir)
    roof = roofline.floor(dataclasses.asdict(cfg), cfg.batch, args.precision)
    fl[f"roofline ({args.precision}, {roof['bound']}-bound)"] = roof["floor_us"]
    return {"config": dataclasses.asdict(cfg), "precision": args.precision, "rows": rows, "floors": fl,
            "roofline": roof}


def report(result, out_dir):
    ok = [r for r in result["rows"] if "error" not in r]
    ok.sort(key=lambda r: r["latency"]["mean_us"])
    best = ok[0]["latency"]["mean_us"] if ok else 1.0
    lines = ["| rank | backend | events mean (us) | latency mean / p50 / p99 (us) | pipelined (us/call) | x fastest | max abs err vs fp32 PyTorch | Spearman | setup (s) |",
             "|---|---|---|---|---|---|---|---|---|"]
    for i, r in enumerate(ok, 1):
        ev, la, pi = r["events"], r["latency"], r["pipelined"]
        lines.append(f"| {i} | {r['name']} | {ev['mean_us']:.1f} | {la['mean_us']:.1f} / {la['p50_us']:.1f} / {la['p99_us']:.1f} "
                     f"| {pi['mean_us']:.1f} | {la['mean_us'] / best:.2f} | {_num(r.get('max_abs_diff'), '{:.2e}')} "
                     f"| {_num(r.get('spearman'), '{:.5f}')} | {r['setup_s']:.1f} |")
    for r in result["rows"]:
        if "error" in r:
            lines.append(f"| - | {r['name']} | failed: {r['error'][:200]} | | | | | | |")
    fl = result["floors"]
    lines += ["", "| floor | us |", "|---|---|"] + [f"| {k} | {v:.1f} |" for k, v in fl.items()]
    table = "\n".join(lines)
    with open(os.path.join(out_dir, "bench.md"), "w") as f:
        f.write(table + "\n")
    with open(os.path.join(out_dir, "bench.json"), "w") as f:
        json.dump(result, f, indent=1, default=str)
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots(figsize=(9, 4.5))
        names = [r["name"] for r in ok][::-1]
        ax.barh(names, [r["latency"]["mean_us"] for r in ok][::-1], color="tab:blue")
        for k, v in fl.items():
            ax.axvline(v, ls="--", lw=0.8, color="gray")
        ax.set_xscale("log")
        ax.set_xlabel("latency per call incl. sync (us, log)")
        c = result["config"]
        tables = c["ln_emb"] if len(c["ln_emb"]) <= 6 else f"{len(c['ln_emb'])} tables"
        ax.set_title(f"DLRM {result['precision']} batch {c['batch']}, {tables} x d={c['m_spa']}, "
                     f"bot {c['ln_bot']}, top {c['ln_top']}", fontsize=9)
        fig.tight_layout()
        fig.savefig(os.path.join(out_dir, "bench.png"), dpi=110)
    except Exception:  # noqa: BLE001 - the plot is optional; the table is the record
        traceback.print_exc()
    print(table)


def _num(v, fmt):
    return "-" if v is None else fmt.format(v)


def _dims(s):
    return [int(v) for v in s.split("-")]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dlrm", default="build/examples/dlrm/dlrm")
    p.add_argument("--precision", choices=["fp32", "tf32", "bf16", "int8"], default="fp32",
                   help="PyTorch rows at this precision (int8: PyTorch runs bf16); luminal --precision")
    p.add_argument("--preset", choices=sorted(dlrm_export.PRESETS), help="model shape (overrides the dims)")
    p.add_argument("--max-rows", type=int, help="cap the preset's tables at N rows")
    p.add_argument("--m-spa", type=int, default=4)
    p.add_argument("--ln-emb", type=_dims, default=[10, 20, 30])
    p.add_argument("--ln-bot", type=_dims, default=[13, 8, 4])
    p.add_argument("--ln-top", type=_dims, default=[10, 8, 1])
    p.add_argument("--batch", type=int, default=2048)
    p.add_argument("--bag", type=int, default=1)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--warmup", type=int, default=50)
    p.add_argument("--iters", type=int, default=500)
    p.add_argument("--aoti-timeout", type=int, default=240)
    p.add_argument("--device", choices=["cuda", "cpu"], default="cuda", help="cpu: a smoke run, eager only")
    p.add_argument("--skip", nargs="*", default=[], help="default reduce-overhead max-autotune aoti frontend")
    p.add_argument("--out", default="bench/results")
    args = p.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    report(run(args), args.out)


if __name__ == "__main__":
    main()
