#!/usr/bin/env python3
"""DLRM inference: luminal-cpp against every PyTorch option, side by side, in one process/run.

Rows: PyTorch eager; torch.compile (default, reduce-overhead, max-autotune); AOTInductor;
CUDA-graph replay of eager; luminal graph path and megakernel path (the `dlrm` binary's
--bench --json, same weights and inputs). Inputs are device-resident for every row.
Three timings per row (docs/benchmarks.md explains them): CUDA events around each call back to
back; latency (host clock around one call + sync); pipelined (N calls, one sync). Plus max abs
error vs eager and setup time. Writes a ranking table, JSON and a PNG plot under --out.

    python bench/bench.py --dlrm build/examples/dlrm/dlrm --out /tmp/bench
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import traceback

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples", "dlrm"))
import export as dlrm_export  # noqa: E402

from bench_common import floors, summarize, time_three  # noqa: E402


def pytorch_rows(cfg, model, inputs, args):
    """Yields (name, fn or exception, setup seconds) for every PyTorch backend."""
    dense_x, indices, offsets = inputs

    def eager():
        return model(dense_x, indices, offsets)

    yield "pytorch eager", eager, 0.0
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


def aoti_row(cfg, args):
    """AOTInductor in a child process (it has segfaulted on the lent machine)."""
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "aoti_row.py")
    cmd = [sys.executable, script, json.dumps(vars(cfg)), args.out, str(args.warmup), str(args.iters)]
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


def luminal_rows(args, data_dir):
    """Runs the dlrm binary for both paths; returns rows parsed from its --json output."""
    rows = []
    for path, extra in [("luminal graph path", []), ("luminal megakernel", ["--mega"])]:
        js = os.path.join(data_dir, f"{'mega' if extra else 'graph'}.json")
        cmd = [args.dlrm, "run", "--weights", os.path.join(data_dir, "weights.safetensors"),
               "--inputs", os.path.join(data_dir, "inputs.safetensors"), "--device", "cuda",
               "--bench", "--input-mode", "device", "--warmup", str(args.warmup),
               "--iters", str(args.iters), "--json", js] + extra
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True)
        wall = time.perf_counter() - t0
        if proc.returncode != 0 or not os.path.exists(js):
            rows.append({"name": path, "error": (proc.stderr or proc.stdout).strip()[-400:]})
            continue
        with open(js) as f:
            res = json.load(f)
        row = {"name": path, "setup_s": res.get("setup_s", wall), "max_abs_diff": res.get("max_abs_diff")}
        row.update(res["bench"])
        rows.append(row)
    return rows


def run(args):
    cfg = dlrm_export.DlrmConfig(args.m_spa, args.ln_emb, args.ln_bot, args.ln_top, args.batch, args.bag, args.seed)
    data_dir = tempfile.mkdtemp(prefix="dlrm_bench_")
    dlrm_export.export(cfg, data_dir)  # the same weights/inputs for every row
    model = dlrm_export.build_model(cfg).cuda()
    dense_x, indices, offsets = dlrm_export.make_inputs(cfg, "cuda")
    inputs = (dense_x, indices, offsets)
    with torch.no_grad():
        ref = model(*inputs).float()
        rows = []
        for name, fn, setup in pytorch_rows(cfg, model, inputs, args):
            if isinstance(fn, Exception):
                rows.append({"name": name, "error": f"{type(fn).__name__}: {str(fn).splitlines()[0][:300]}"})
                print(f"[bench] {name}: failed: {rows[-1]['error']}", flush=True)
                continue
            out = fn()
            err = (out.float() - ref).abs().max().item()
            row = {"name": name, "setup_s": setup, "max_abs_diff": err}
            row.update(time_three(fn, args.warmup, args.iters))
            rows.append(row)
            print(f"[bench] {name}: {row['latency']['mean_us']:.1f} us", flush=True)
    if "aoti" not in args.skip:
        rows.append(aoti_row(cfg, args))
        print(f"[bench] AOTInductor: {rows[-1].get('error') or rows[-1]['latency']['mean_us']}", flush=True)
    rows += luminal_rows(args, data_dir)
    return {"config": vars(cfg), "rows": rows, "floors": floors(cfg, inputs)}


def report(result, out_dir):
    ok = [r for r in result["rows"] if "error" not in r]
    ok.sort(key=lambda r: r["latency"]["mean_us"])
    best = ok[0]["latency"]["mean_us"] if ok else 1.0
    lines = ["| rank | backend | events mean (us) | latency mean / p50 / p99 (us) | pipelined (us/call) | x fastest | max abs err vs eager | setup (s) |",
             "|---|---|---|---|---|---|---|---|"]
    for i, r in enumerate(ok, 1):
        ev, la, pi = r["events"], r["latency"], r["pipelined"]
        lines.append(f"| {i} | {r['name']} | {ev['mean_us']:.1f} | {la['mean_us']:.1f} / {la['p50_us']:.1f} / {la['p99_us']:.1f} "
                     f"| {pi['mean_us']:.1f} | {la['mean_us'] / best:.2f} | {r['max_abs_diff']:.2e} | {r['setup_s']:.1f} |")
    for r in result["rows"]:
        if "error" in r:
            lines.append(f"| - | {r['name']} | failed: {r['error'][:200]} | | | | | |")
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
        ax.set_title(f"DLRM batch {c['batch']}, tables {c['ln_emb']}, bot {c['ln_bot']}, top {c['ln_top']}")
        fig.tight_layout()
        fig.savefig(os.path.join(out_dir, "bench.png"), dpi=110)
    except Exception:  # noqa: BLE001 - the plot is optional; the table is the record
        traceback.print_exc()
    print(table)


def _dims(s):
    return [int(v) for v in s.split("-")]


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dlrm", default="build/examples/dlrm/dlrm")
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
    p.add_argument("--skip", nargs="*", default=[], help="default reduce-overhead max-autotune aoti")
    p.add_argument("--out", default="bench/results")
    args = p.parse_args()
    os.makedirs(args.out, exist_ok=True)
    report(run(args), args.out)


if __name__ == "__main__":
    main()
