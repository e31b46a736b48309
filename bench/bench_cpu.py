#!/usr/bin/env python3
"""DLRM inference on the CPU: PyTorch eager, torch.compile (inductor, default mode), ONNX Runtime (CPU
EP) and luminal.compile side by side, same inputs, same precision, beside a measured roofline floor.

    python3 bench/bench_cpu.py --quick --rows eager,compile,ort
    python3 bench/bench_cpu.py --models kaggle --batches 2048 --precisions fp32 --threads 2 --json /tmp/cpu.json

Models (examples/dlrm/export.py's DLRM, nn.EmbeddingBag sum, dot interaction, one index per bag): seed
(tables 10/20/30 x 4), kaggle (26 x 100,000 rows x 16), mlperf (the Terabyte tables x 128, capped at
--mlperf-rows). Each (--threads value, row) runs in a child process of this script (--rows-together:
each --threads value; on the GPU host a row run after PyTorch's in one process was up to 1.65x slower
than in a process of its own, 2026-12-07) with OMP_NUM_THREADS and MKL_NUM_THREADS set before torch,
onnxruntime or luminal load (plus torch.set_num_threads and ORT's intra_op_num_threads), so luminal rows
get the same count through OpenMP. Latency: time.perf_counter around each call (inputs created once, on
the host), median and mean of --iters calls after --warmup calls and at least --warmup-seconds of calls
(a shared host's first calls after setup can run at half speed: 2026-12-07, the H100 host's Xeon,
docs/benchmarks.md). Accuracy: max abs diff against eager fp32 on the same inputs; beyond 1e-4 (fp32) or
5e-2 x max|output| (bf16) the row is WRONG (kept in the table). bf16: the model and dense_x in bfloat16
for PyTorch/ORT, luminal precision="bf16". Floor: max(FLOPs / GEMM rate, bytes / copy bandwidth), rates
measured once per thread count, by its first child (cpu_rows.machine_rates, cpu_rows.floor).
"""
import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import tempfile
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cpu_rows as cr  # noqa: E402

TOL = {"fp32": 1e-4, "bf16": 5e-2}  # fp32: absolute; bf16: relative to max |eager fp32 output|


def log(msg):
    """A progress line on stderr."""
    print(f"[bench_cpu] {msg}", file=sys.stderr, flush=True)


def csv(kind, choices=None):
    """An argparse type: a comma-separated list of `kind`, each in choices when given."""
    def parse(s):
        vals = [kind(v.strip()) for v in s.split(",") if v.strip()]
        bad = [v for v in vals if choices and v not in choices]
        if bad or not vals:
            raise argparse.ArgumentTypeError(f"{s!r}: expected a comma list of {choices or kind.__name__}")
        return vals
    return parse


def all_threads():
    """The CPUs this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def parse_args(argv):
    """The CLI; --quick narrows it to a smoke run (seed, batches 1 and 64, 20 iterations)."""
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--models", type=csv(str, cr.MODELS), default=list(cr.MODELS))
    p.add_argument("--rows", type=csv(str, cr.ROWS), default=list(cr.ROWS))
    p.add_argument("--batches", type=csv(int), default=[1, 64, 2048])
    p.add_argument("--precisions", type=csv(str, tuple(cr.DTYPES)), default=["fp32", "bf16"])
    p.add_argument("--threads", default="1,all", help="comma list of thread counts; 'all' = every CPU here")
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--warmup-seconds", type=float, default=1.0,
                   help="keep warming up until this long has passed too (every row alike)")
    p.add_argument("--iters", type=int, default=100)
    p.add_argument("--max-seconds", type=float, default=30.0,
                   help="stop a row's timed calls after this long (at least 3 calls; n is reported)")
    p.add_argument("--rows-together", action="store_true",
                   help="run every row of a thread count in one process (default: a process per row, so no "
                        "row runs after another's threads, caches and compilers)")
    p.add_argument("--mlperf-rows", type=int, default=20000, help="rows per MLPerf table (cap)")
    p.add_argument("--luminal-device", default="cpu", help="luminal.compile's device ('cpu', 'reference')")
    p.add_argument("--json", help="write every cell (and the machine rates) to this JSON file")
    p.add_argument("--quick", action="store_true", help="smoke run: seed only, batches 1,64, 20 iterations")
    p.add_argument("--_rates", help=argparse.SUPPRESS)  # internal: the machine rates, JSON, measured already
    p.add_argument("--_child", help=argparse.SUPPRESS)  # internal: run one --threads value, JSON lines here
    a = p.parse_args(argv)
    if a.quick:
        a.models, a.batches, a.iters, a.warmup = ["seed"], [1, 64], 20, min(a.warmup, 5)
        a.warmup_seconds = min(a.warmup_seconds, 0.2)
    try:
        a.thread_list = list(dict.fromkeys(all_threads() if t.strip() == "all" else int(t)
                                           for t in a.threads.split(",") if t.strip()))
    except ValueError:
        p.error(f"--threads {a.threads!r}: expected integers or 'all'")
    if not a.thread_list or min(a.thread_list) < 1:
        p.error("--threads needs at least one count >= 1")
    return a


def time_row(fn, a):
    """cr.time_call after --warmup calls and --warmup-seconds, with the count cut so the timed calls
    fit --max-seconds."""
    t0, calls = time.perf_counter(), 0
    while calls < a.warmup or time.perf_counter() - t0 < a.warmup_seconds:
        fn()
        calls += 1
    probe = cr.time_call(fn, 0, 3)  # 3 timed calls tell how many fit in the budget
    iters = max(3, min(a.iters, int(a.max_seconds * 1e6 / max(probe["median_us"], 1e-3))))
    return cr.time_call(fn, 0, iters)


def run_cell(row, m32, model, x32, x, ref, precision, threads, a):
    """One (row, cell): setup, first-call accuracy vs eager fp32, timing. Never raises."""
    rec = {"row": row}
    t0 = time.perf_counter()
    try:
        with torch.no_grad():
            lum = row == "luminal"  # luminal takes the fp32 model and inputs; precision= does the cast
            fn = cr.ROW_FUNCS[row](m32 if lum else model, x32 if lum else x, precision, threads,
                                   a.luminal_device)
            rec["setup_s"] = time.perf_counter() - t0
            if getattr(fn, "note", None):
                rec["note"] = fn.note
            out = cr.as_tensor(fn())
            rec.update(time_row(fn, a))
        if out.shape != ref.shape:
            raise ValueError(f"output shape {tuple(out.shape)}, eager {tuple(ref.shape)}")
        diff = (out - ref).abs().max().item()
        tol = TOL[precision] * (ref.abs().max().item() if precision == "bf16" else 1.0)
        rec.update(max_abs_diff=diff, tol=tol, status="ok" if diff <= tol else "WRONG")
    except cr.Skip as e:
        rec.update(status="skipped", reason=str(e))
    except Exception as e:  # noqa: BLE001 - a failing row is a table row, not a crash
        rec.update(status="error", reason=cr.error_text(e), setup_s=time.perf_counter() - t0)
    return rec


def child(a):
    """Runs every cell at one thread count (set before anything loaded), one JSON line per result."""
    threads = a.thread_list[-1]
    torch.set_num_threads(threads)
    out = open(a._child, "a")

    def emit(rec):
        out.write(json.dumps(rec) + "\n")
        out.flush()

    if a._rates:  # measured by this thread count's first child: every row's floor from the same rates
        with open(a._rates) as f:
            rates = json.load(f)
    else:
        log(f"threads {threads}: measuring GEMM rate and copy bandwidth")
        rates = cr.machine_rates(threads)
        emit(dict(rates, kind="rates"))
    for name in a.models:
        log(f"threads {threads}: building {name}")
        cfg, m32 = cr.build(name, a.mlperf_rows)
        models = {p: cr.prepare(m32, p) for p in a.precisions}
        for batch in a.batches:
            x32 = cr.make_inputs(cfg, batch)
            with torch.no_grad():
                ref = m32(*x32).float()
            for p in a.precisions:
                x = cr.cast_inputs(x32, p)
                fl = cr.floor(cfg, batch, p, rates)
                for row in a.rows:
                    cell = dict(kind="cell", model=name, batch=batch, precision=p, threads=threads,
                                floor_us=fl["floor_us"], bound=fl["bound"], flops=fl["flops"], bytes=fl["bytes"])
                    log(f"{name} {p} batch {batch} threads {threads}: {cr.ROW_NAMES[row]} ...")
                    rec = dict(cell, **run_cell(row, m32, models[p], x32, x, ref, p, threads, a))
                    if "median_us" in rec:
                        rec["x_floor"] = rec["median_us"] / fl["floor_us"]
                    log(f"  -> {rec['status']}" + (f", median {rec['median_us']:.1f} us" if "median_us" in rec
                                                   else f": {rec.get('reason', '')}"))
                    emit(rec)
    out.close()


def fmt(v, spec):
    """A number for the table, or '-'."""
    return "-" if v is None else format(v, spec)


def table(cells, rates):
    """The markdown report: machine rates per thread count, then one line per (cell, row)."""
    lines = ["| threads | fp32 GEMM GFLOP/s | bf16 GEMM GFLOP/s | copy GB/s (read+write) |", "|---|---|---|---|"]
    for r in rates:
        lines.append(f"| {r['threads']} | {r['gemm_fp32_flops'] / 1e9:.1f} | {r['gemm_bf16_flops'] / 1e9:.1f} "
                     f"| {r['bandwidth_Bps'] / 1e9:.1f} |")
    lines += ["", "| model | prec | batch | threads | row | median us | mean us | floor us | x floor "
              "| n | max abs diff | setup s | status |", "|---" * 13 + "|"]
    for c in cells:
        status = c["status"] if c["status"] in ("ok", "WRONG") else f"{c['status']}: {c.get('reason', '')}"
        status += f" ({c['note']})" if c.get("note") else ""
        lines.append(" | ".join([
            f"| {c['model']}", c["precision"], str(c["batch"]), str(c["threads"]), cr.ROW_NAMES[c["row"]],
            fmt(c.get("median_us"), ".1f"), fmt(c.get("mean_us"), ".1f"),
            f"{c['floor_us']:.2f} ({c['bound'][:3]})", fmt(c.get("x_floor"), ".1f"), fmt(c.get("n"), "d"),
            fmt(c.get("max_abs_diff"), ".2e"), fmt(c.get("setup_s"), ".2f"), status.replace("|", "/")]) + " |")
    return "\n".join(lines)


def versions():
    """Versions and machine for the JSON and the table header."""
    v = {"torch": torch.__version__, "python": platform.python_version(), "cpus": all_threads(),
         "date": datetime.datetime.now().isoformat(timespec="seconds")}
    for mod in ("onnxruntime", "luminal"):
        try:
            m = __import__(mod)
            v[mod] = getattr(m, "__version__", None) or f"from {os.path.dirname(m.__file__)}"
        except Exception as e:  # noqa: BLE001
            v[mod] = f"not importable ({type(e).__name__})"
    try:
        with open("/proc/cpuinfo") as f:
            v["cpu"] = next(ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name"))
    except (OSError, StopIteration):
        v["cpu"] = platform.processor()
    return v


def parent(a, argv):
    """Runs one child per thread count and row (--rows-together: per thread count; stdout kept for the
    table), prints the table, writes JSON."""
    cells, rates, failures = [], [], []
    groups = [a.rows] if a.rows_together else [[r] for r in a.rows]
    for t in a.thread_list:
        env = dict(os.environ, OMP_NUM_THREADS=str(t), MKL_NUM_THREADS=str(t))
        rates_file = tempfile.NamedTemporaryFile("w", suffix=".json")
        for rows in groups:
            with tempfile.NamedTemporaryFile("r", suffix=".jsonl") as f:
                cmd = [sys.executable, os.path.abspath(__file__), *argv, "--threads", str(t), "--rows",
                       ",".join(rows), "--_child", f.name]
                if any(r["threads"] == t for r in rates):
                    cmd += ["--_rates", rates_file.name]
                rc = subprocess.run(cmd, env=env, stdout=sys.stderr).returncode
                for line in f:
                    rec = json.loads(line)
                    if rec.pop("kind") != "rates":
                        cells.append(rec)
                        continue
                    rates.append(rec)
                    json.dump(rec, rates_file)
                    rates_file.flush()
            if rc != 0:  # cells it finished stay; the rest of this child's cells are missing, said here
                failures.append(f"threads {t}, rows {','.join(rows)}: child exited {rc} "
                                "(cells after the last listed one did not run)")
        rates_file.close()
    order = {"model": a.models, "batch": a.batches, "precision": a.precisions, "row": a.rows}
    cells.sort(key=lambda c: (c["threads"], *(order[k].index(c[k]) for k in ("model", "batch", "precision",
                                                                               "row"))))
    meta = versions()
    print(f"DLRM CPU inference, {meta['cpu']} ({meta['cpus']} CPUs), torch {meta['torch']}, "
          f"onnxruntime {meta['onnxruntime']}, luminal {meta['luminal']} (device {a.luminal_device}), "
          f"{meta['date']}; warmup {a.warmup} calls and {a.warmup_seconds:g} s, iters {a.iters}; "
          "host clock per call, inputs on the host\n")
    print(table(cells, rates))
    for msg in failures:
        print(f"\n**{msg}**")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"meta": meta, "args": {k: v for k, v in vars(a).items() if k != "_child"},
                       "rates": rates, "cells": cells, "failures": failures}, f, indent=1)
        log(f"wrote {a.json}")
    return 1 if failures else 0


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    a = parse_args(argv)
    if a._child:
        child(a)
        return 0
    return parent(a, argv)


if __name__ == "__main__":
    sys.exit(main())
