#!/usr/bin/env python3
"""MLPerf DLRM-v2 (DCNv2) inference on one GPU: luminal (the `dlrm` CLI, weights generated from a seed)
beside plain PyTorch (eager, CUDA-graph replay, torch.compile) at the same precision, same shapes.

    python3 bench/bench_v2_gpu.py --dlrm .gpu/examples/dlrm/dlrm --json out/v2_gpu.json
    python3 bench/bench_v2_gpu.py --dlrm .gpu/examples/dlrm/dlrm --sizes full --precisions bf16 --no-accuracy
    python3 bench/bench_v2_gpu.py --device cpu --preset dlrm-v2-small --batches 8,64 --dlrm build/examples/dlrm/dlrm
    (device: tools/gpu-v2 [ARGS], see its header)

Cells: size (capped: every table at --max-rows rows; full: MLPerf's rows, 52 GB of tables in bf16, 104.5 GB
in fp32) x precision (fp32: exact, TF32 off; bf16: weights and activations) x batch (pairs per call). PyTorch
builds the model on the GPU in the target dtype (export_v2.DLRMv2, tables uniform(+-sqrt(1/rows)), indices
int32 as MLPerf); the model is freed before luminal's process for that size runs, so the tables are never
held twice. Timing: CUDA events around each call, back to back, after warm-up (luminal: its `bench.events`,
the same method); median and p99 per call; pairs/s = batch / median; one MLPerf sample ~270 pairs.
Floor: max(FLOPs / dense peak, bytes / HBM bandwidth), FLOPs and bytes from cpu_rows.v2_work.
Accuracy (capped, batch 2048): an export_v2.export model, luminal and PyTorch vs its fp32 `expected`.
Everything stops starting new cells after --time-budget seconds (the skipped cells say so).
"""
import argparse
import contextlib
import gc
import json
import math
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time

T0 = time.perf_counter()  # --time-budget counts from here (torch's import included)
import torch  # noqa: E402
from torch import nn  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import accuracy as accuracy_stats  # noqa: E402  (bench/accuracy.py: ties get average ranks)
import bench_common  # noqa: E402
from bench_cpu import csv, fmt  # noqa: E402
import cpu_rows  # noqa: E402  (puts examples/dlrm on sys.path)
import export_v2  # noqa: E402

# int8: row-wise int8 tables with bf16 dense parts (luminal only: PyTorch has no int8 EmbeddingBag on CUDA
# without FBGEMM's TBE, which the device machine lacks; its bf16 rows are the comparison). fp8: int8 tables and
# e4m3 GEMMs (luminal only: a PyTorch DLRM-v2 with torch._scaled_mm layers is not written; bench/fp8_torch.py
# compares the GEMMs themselves).
DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "int8": torch.bfloat16, "fp8": torch.bfloat16}
QUANTIZED = ("int8", "fp8")  # luminal-only precisions
ENGINES = {"eager": "pytorch eager", "graph": "pytorch cuda-graph", "compile": "torch.compile",
           "luminal": "luminal"}
PEAKS = {"h200": (989e12, 67e12, 4.8e12), "h100": (989e12, 67e12, 3.35e12)}  # bf16, fp32 FLOP/s, bytes/s
SAMPLE = 270  # pairs per MLPerf DLRM-v2 sample (about)


def log(msg):
    """A progress line with the elapsed seconds."""
    print(f"[bench_v2_gpu] {time.perf_counter() - T0:6.1f}s {msg}", flush=True)


def left(a):
    """Seconds left of --time-budget."""
    return a.time_budget - (time.perf_counter() - T0)


def parse_args(argv):
    """The CLI."""
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dlrm", default=".gpu/examples/dlrm/dlrm", help="luminal's dlrm binary")
    p.add_argument("--preset", choices=sorted(export_v2.PRESETS), default="dlrm-v2")
    p.add_argument("--sizes", type=csv(str, ("capped", "full")), default=["capped", "full"])
    p.add_argument("--precisions", type=csv(str, tuple(DTYPES)), default=["fp32", "bf16"])
    p.add_argument("--batches", type=csv(int), default=[270, 2048, 16384, 65536])
    p.add_argument("--engines", type=csv(str, tuple(ENGINES)), default=list(ENGINES))
    p.add_argument("--max-rows", type=int, default=1_000_000, help="rows per table of the capped size")
    p.add_argument("--device", choices=["cuda", "cpu"], default="cuda",
                   help="cpu: a smoke test (no CUDA-graph row; torch.compile only with --compile)")
    p.add_argument("--compile", action="store_true", help="with --device cpu: run the torch.compile row too")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--iters", type=int, default=100)
    p.add_argument("--max-seconds", type=float, default=5.0, help="cut a PyTorch row's timed calls to this")
    p.add_argument("--compile-timeout", type=float, default=240.0, help="seconds for torch.compile's first call")
    p.add_argument("--compile-dynamic", action="store_true",
                   help="torch.compile(model) with its default dynamic shapes (one recompile reused by later "
                        "batches) instead of dynamic=False (a graph per batch, as luminal compiles per batch)")
    p.add_argument("--time-budget", type=float, default=540.0, help="start no cell after this many seconds")
    p.add_argument("--mem-margin-gb", type=float, default=6.0, help="free memory kept beyond the weights")
    p.add_argument("--peaks", default="auto", help="the floor's rates: h200 (bf16 989e12, fp32 67e12 FLOP/s dense, "
                   "4.8e12 B/s), h100 (989e12,67e12,3.35e12), BF16,FP32,BW, or auto (h100 if the name says H100)")
    p.add_argument("--luminal-args", default="", help="extra `dlrm run` flags, e.g. '--search-seconds 20'")
    p.add_argument("--accuracy", action=argparse.BooleanOptionalAction, default=True)
    p.add_argument("--accuracy-rows", type=int, default=100_000)
    p.add_argument("--accuracy-batch", type=int, default=2048)
    p.add_argument("--log-dir", help="luminal's logs (default: next to --json, else a temp dir)")
    p.add_argument("--json", help="write every cell and the machine to this file")
    a = p.parse_args(argv)
    try:
        ok = a.peaks in ("auto", *PEAKS) or len([float(v) for v in a.peaks.split(",")]) == 3
    except ValueError:
        ok = False
    if not ok:
        p.error(f"--peaks {a.peaks!r}: auto, h100, h200 or BF16,FP32,BW")
    if a.device == "cpu":
        a.engines = [e for e in a.engines if e != "graph" and (e != "compile" or a.compile)]
    a.log_dir = a.log_dir or (os.path.dirname(os.path.abspath(a.json)) if a.json else tempfile.mkdtemp())
    os.makedirs(a.log_dir, exist_ok=True)
    return a


def sync(a):
    """Waits for the device."""
    if a.device == "cuda":
        torch.cuda.synchronize()


def machine(a):
    """torch version, device name and memory, and the floor's rates."""
    m = {"torch": torch.__version__, "python": sys.version.split()[0], "device": a.device,
         "dlrm": os.path.abspath(a.dlrm)}
    if a.device == "cuda":
        free, total = torch.cuda.mem_get_info()
        m.update(device_name=torch.cuda.get_device_name(), cuda=torch.version.cuda, mem_total_gb=total / 1e9,
                 mem_free_gb=free / 1e9, capability=".".join(map(str, torch.cuda.get_device_capability())))
    else:
        m.update(device_name="cpu", cpus=os.cpu_count(), mem_free_gb=export_v2.free_resources("/tmp")[1] / 1e9)
    kind = a.peaks if a.peaks != "auto" else ("h100" if "H100" in m["device_name"] else "h200")
    bf16, fp32, bw = PEAKS[kind] if kind in PEAKS else map(float, kind.split(","))
    m["peaks"] = {"from": kind, "bf16": bf16, "fp32": fp32, "hbm": bw}
    return m


def config(a, size, batch):
    """The V2Config of a size at a batch."""
    return export_v2.from_preset(a.preset, a.max_rows if size == "capped" else None, batch=batch, seed=a.seed)


def floor(cfg, batch, precision, peaks):
    """(floor us, bound, flops, bytes) from cpu_rows.v2_work at the given peaks."""
    flops, nbytes = cpu_rows.v2_work(cfg, batch, precision)
    rate = peaks["bf16"] * 2 if precision == "fp8" else peaks["bf16" if precision == "int8" else precision]
    c, m = flops / rate * 1e6, nbytes / peaks["hbm"] * 1e6
    return max(c, m), "compute" if c >= m else "memory", flops, nbytes


def device_model(cfg, precision, device):
    """DLRMv2 built where it runs, in the target dtype: tables uniform(+-sqrt(1/rows)) made on the device."""
    dt = DTYPES[precision]
    torch.manual_seed(cfg.seed)
    tables = [torch.empty(r, cfg.dim, dtype=dt, device=device).uniform_(-math.sqrt(1 / r), math.sqrt(1 / r))
              for r in cfg.rows]
    model = export_v2.DLRMv2(cfg, tables)  # dense parts on the CPU in fp32 until .to()
    export_v2.init_dense(model, cfg.seed)
    return model.to(device=device, dtype=dt).eval()


def device_inputs(cfg, precision, device):
    """export_v2.make_inputs moved to the device: dense in the row's dtype, int32 values and lengths."""
    dense, values, lengths = export_v2.make_inputs(cfg)
    return (dense.to(device, DTYPES[precision]), [v.to(device) for v in values], [n.to(device) for n in lengths])


def time_fn(fn, a):
    """--warmup calls, then timed calls (CUDA events around each, back to back; host clock on the CPU),
    as many as fit --max-seconds (at least 5): median, mean and p99 in us."""
    for _ in range(a.warmup):
        fn()
    sync(a)
    t = time.perf_counter()
    fn()
    sync(a)
    iters = max(5, min(a.iters, int(a.max_seconds / max(time.perf_counter() - t, 1e-6))))
    us = []
    if a.device == "cuda":
        ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(iters)]
        for s, e in ev:
            s.record()
            fn()
            e.record()
        torch.cuda.synchronize()
        us = [s.elapsed_time(e) * 1e3 for s, e in ev]
    for _ in range(0 if us else iters):  # the CPU: host clock
        t = time.perf_counter()
        fn()
        us.append((time.perf_counter() - t) * 1e6)
    st = bench_common._stats(us)
    return dict(median_us=st.pop("p50_us"), **st)


class CompileTimeout(Exception):
    """torch.compile's first call ran past --compile-timeout."""


@contextlib.contextmanager
def alarm(seconds):
    """Raises CompileTimeout in the main thread after `seconds`."""
    def fire(*_):
        raise CompileTimeout(f"torch.compile not done after {seconds:.0f} s")
    old = signal.signal(signal.SIGALRM, fire)
    signal.alarm(max(1, int(seconds)))
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def release(a, e=None):
    """Frees what PyTorch holds (and the frames of exception e) back to the device."""
    if e is not None:
        e.__traceback__ = None
    gc.collect()
    if a.device == "cuda":
        torch.cuda.empty_cache()


def cuda_graph(model, x):
    """model(*x) captured in a CUDA graph (warm-up on a side stream first); returns (replay, graph)."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            model(*x)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        model(*x)
    return g.replay, g


def pytorch_cells(a, size, precision, cell):
    """The PyTorch rows of one (size, precision), every batch; the model is freed before returning."""
    engines = [e for e in a.engines if e != "luminal"]
    model = compiled = compile_err = None
    out = []
    try:
        t = time.perf_counter()
        model = device_model(config(a, size, a.batches[0]), precision, a.device)
        sync(a)
        log(f"{size} {precision}: PyTorch model built in {time.perf_counter() - t:.1f} s")
    except Exception as e:  # noqa: BLE001 - e.g. out of memory
        why = f"model build failed: {cpu_rows.error_text(e)}"
        log(f"{size} {precision}: PyTorch {why}")
        release(a, e)
        return [dict(cell(size, precision, b, eng), note=why) for b in a.batches for eng in engines]
    for batch in a.batches:
        x = device_inputs(config(a, size, batch), precision, a.device)
        for eng in engines:
            c = cell(size, precision, batch, eng)
            out.append(c)
            if left(a) <= 0 or (eng == "compile" and compile_err):
                c["note"] = "skipped: --time-budget" if left(a) <= 0 else f"skipped: {compile_err}"
                continue
            log(f"{size} {precision} batch {batch}: {ENGINES[eng]} ...")
            t = time.perf_counter()
            fn = g = None
            try:
                with torch.no_grad():
                    if eng == "eager":
                        fn = lambda: model(*x)  # noqa: E731
                    elif eng == "graph":
                        fn, g = cuda_graph(model, x)
                    else:
                        if compiled is None:
                            torch._dynamo.reset()
                            compiled = torch.compile(model, dynamic=None if a.compile_dynamic else False)
                        with alarm(min(a.compile_timeout, max(left(a), 1))):
                            compiled(*x)
                            sync(a)
                        fn = lambda: compiled(*x)  # noqa: E731
                        c["note"] = (f"compile {time.perf_counter() - t:.0f}s, "
                                     + ("dynamic=None" if a.compile_dynamic else "dynamic=False"))
                    c["setup_s"] = time.perf_counter() - t
                    c.update(time_fn(fn, a))
            except Exception as e:  # noqa: BLE001 - a failing row is a note, not a crash
                while e.__cause__ is not None:  # dynamo wraps what failed inside it
                    e = e.__cause__
                c["note"] = f"failed: {cpu_rows.error_text(e)}"
                if "torch.compile not done" in str(e):  # a CompileTimeout, maybe wrapped: skip later batches
                    compile_err = f"torch.compile timed out at batch {batch}"
            fn = g = None
            release(a)
            fin(c)
        del x
    del model, compiled
    torch._dynamo.reset()
    release(a)
    log(f"{size} {precision}: PyTorch model freed" + (f", {torch.cuda.mem_get_info()[0] / 1e9:.1f} GB free"
                                                      if a.device == "cuda" else ""))
    return out


def run_dlrm(a, args, name):
    """One `dlrm run` (args after `run`) with its output in LOG_DIR/name.log: (rc, json or None, tail)."""
    path, logf = os.path.join(a.log_dir, name + ".json"), os.path.join(a.log_dir, name + ".log")
    with contextlib.suppress(FileNotFoundError):
        os.remove(path)
    cmd = [a.dlrm, "run", *args, "--json", path, *shlex.split(a.luminal_args)]
    with open(logf, "w") as f:
        f.write(" ".join(cmd) + "\n")
        f.flush()
        try:
            rc = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, timeout=max(left(a), 5)).returncode
        except subprocess.TimeoutExpired:
            rc = "timeout"
        except OSError as e:  # no binary
            rc = "-"
            f.write(cpu_rows.error_text(e) + "\n")
    with open(logf, errors="replace") as f:
        lines = [ln.strip() for ln in f.read().strip().splitlines()]
    fails = [ln for ln in lines if "FAIL" in ln or "rror" in ln]  # the check's verdict, else the last lines
    tail = " / ".join(fails[-2:] or lines[-3:])
    with open(path) if os.path.exists(path) else contextlib.nullcontext() as f:
        return rc, json.load(f) if f else None, tail


def luminal_cells(a, size, precision, cell):
    """The luminal rows of one (size, precision): one `dlrm run --synthetic` per batch (--bench-batches
    does not combine with --synthetic)."""
    out = []
    for batch in a.batches:
        c = cell(size, precision, batch, "luminal")
        out.append(c)
        if left(a) <= 0:
            c["note"] = "skipped: --time-budget"
            continue
        log(f"{size} {precision} batch {batch}: luminal ...")
        args = ["--preset", a.preset, "--synthetic", str(a.seed), "--batch", str(batch), "--precision", precision,
                "--device", a.device, "--bench", "--warmup", str(a.warmup), "--iters", str(a.iters)]
        args += ["--max-rows", str(a.max_rows)] if size == "capped" else []
        rc, data, tail = run_dlrm(a, args, f"luminal_{size}_{precision}_{batch}")
        b = (data or {}).get("bench")
        if b:
            ev, diff = b["events"], data.get("max_abs_diff")
            c.update(median_us=ev["p50_us"], p99_us=ev["p99_us"], mean_us=ev["mean_us"], n=b.get("iters"),
                     setup_s=data.get("setup_s"), latency=b.get("latency"), pipelined=b.get("pipelined"))
            c["note"] = (f"sparse {data.get('sparse_path')}, setup {data.get('setup_s', 0):.1f}s, "
                         f"{b.get('events_method')}" + (f", max diff {diff:.1e} vs CPU ref" if diff is not None else "")
                         + ("" if rc == 0 else f"; exit {rc}: {tail}"))
        else:
            c["note"] = f"failed (exit {rc}): {tail}"
        fin(c)
    return out


def fin(c):
    """Derived columns and the cell's log line."""
    if c.get("median_us"):
        c["pairs_s"] = c["batch"] / c["median_us"] * 1e6
        c["samples_s"] = c["pairs_s"] / SAMPLE
        log(f"  -> median {c['median_us']:.1f} us, p99 {c['p99_us']:.1f} us, {c['pairs_s']:.3g} pairs/s"
            + (f" ({c['note']})" if c.get("note") else ""))
    else:
        log(f"  -> {c.get('note')}")


def fits(a, size, precision, mach):
    """None, or why the weights of (size, precision) do not fit the free memory (torch.cuda.mem_get_info)."""
    cfg = config(a, size, 1)
    need = export_v2.weight_bytes(cfg) * (2 if precision == "bf16" else 4) / 4
    if precision in QUANTIZED:  # 1-byte codes + an 8-byte scale and bias per row; bf16 dense parts
        tables = sum(cfg.rows) * cfg.dim * 4
        need = (export_v2.weight_bytes(cfg) - tables) / 2 + sum(cfg.rows) * (cfg.dim + 8)
    free = torch.cuda.mem_get_info()[0] if a.device == "cuda" else export_v2.free_resources("/tmp")[1]
    if need + a.mem_margin_gb * 1e9 > free:
        return (f"skipped: {precision} weights {need / 1e9:.1f} GB + {a.mem_margin_gb:.0f} GB margin > "
                f"{free / 1e9:.1f} GB free on {mach['device_name']}")
    return None


def accuracy(a):
    """export_v2.export of a capped model at --accuracy-batch; luminal (file) and PyTorch vs `expected`."""
    rows, tmp = [], tempfile.mkdtemp(prefix="v2acc_")
    try:
        cfg = export_v2.from_preset(a.preset, a.accuracy_rows, batch=a.accuracy_batch)
        log(f"accuracy: exporting {export_v2.weight_bytes(cfg) / 1e9:.2f} GB (tables <= {a.accuracy_rows} rows, "
            f"batch {cfg.batch}) to {tmp}")
        expected, _ = export_v2.export(cfg, tmp, progress=log)
        expected = expected.flatten().double()
        for p in a.precisions:
            if left(a) <= 0:
                break
            rc, data, tail = run_dlrm(a, ["--weights", os.path.join(tmp, "weights.safetensors"), "--inputs",
                                          os.path.join(tmp, "inputs.safetensors"), "--precision", p,
                                          "--device", a.device], f"accuracy_luminal_{p}")
            d = data or {}
            note = "ok" if rc == 0 else ("outside tol (exit 1)" if rc == 1 else f"failed (exit {rc}): {tail}")
            rows.append(dict(engine="luminal", precision=p, max_abs_diff=d.get("max_abs_diff"),
                             spearman=d.get("spearman"), tol=d.get("tol"), note=note))
        model, x = export_v2.build_model(cfg), export_v2.make_inputs(cfg)  # the exported weights (same seed)
        for p in (p for p in a.precisions if p not in QUANTIZED):  # luminal-only precisions (DTYPES)
            model = model.to(a.device, DTYPES[p])
            with torch.no_grad():
                y = model(x[0].to(a.device, DTYPES[p]), [v.to(a.device) for v in x[1]],
                          [n.to(a.device) for n in x[2]]).flatten().double().cpu()
            rows.append(dict(engine="pytorch eager", precision=p, max_abs_diff=float((y - expected).abs().max()),
                             spearman=accuracy_stats.spearman(y.numpy(), expected.numpy()), note="ok"))
        del model
    except Exception as e:  # noqa: BLE001
        rows.append(dict(engine="-", precision="-", note=f"failed: {cpu_rows.error_text(e)}"))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    for r in rows:
        log(f"accuracy {r['engine']} {r['precision']}: max abs diff {r.get('max_abs_diff')}, "
            f"spearman {r.get('spearman')}: {r['note']}")
    return rows


def report(a, mach, cells, acc):
    """The markdown tables: every cell, the MLPerf view (batch 270) and the accuracy rows."""
    pk = mach["peaks"]
    print(f"\nDLRM-v2 ({a.preset}) on {mach['device_name']}, torch {mach['torch']}; capped = tables <= "
          f"{a.max_rows} rows; {'CUDA events' if a.device == 'cuda' else 'host clock'} per call; floor at {pk['from']} peaks (bf16 {pk['bf16']:.3g}, "
          f"fp32 {pk['fp32']:.3g} FLOP/s, {pk['hbm']:.3g} B/s); samples = pairs / {SAMPLE}\n")
    print("| size | precision | batch | engine | median us | p99 us | pairs/s | samples/s | floor us | note |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    order = {k: i for i, k in enumerate([*a.sizes, *a.precisions, *ENGINES])}
    cells = sorted(cells, key=lambda c: (order[c["size"]], order[c["precision"]], c["batch"], order[c["engine"]]))
    for c in cells:
        print(f"| {c['size']} | {c['precision']} | {c['batch']} | {ENGINES[c['engine']]} | "
              f"{fmt(c.get('median_us'), '.1f')} | {fmt(c.get('p99_us'), '.1f')} | {fmt(c.get('pairs_s'), '.4g')} | "
              f"{fmt(c.get('samples_s'), '.4g')} | {c['floor_us']:.1f} ({c['bound'][:3]}) | "
              f"{(c.get('note') or '').replace('|', '/')} |")
    mlperf = [c for c in cells if c["batch"] == SAMPLE and c.get("median_us")]
    if mlperf:
        print(f"\nMLPerf view (batch {SAMPLE} = one sample):\n\n| size | precision | engine | p50 us | p99 us | samples/s |")
        print("|---|---|---|---|---|---|")
        for c in mlperf:
            print(f"| {c['size']} | {c['precision']} | {ENGINES[c['engine']]} | {c['median_us']:.1f} | "
                  f"{c['p99_us']:.1f} | {c['samples_s']:.4g} |")
    if acc:
        print(f"\nAccuracy (tables <= {a.accuracy_rows} rows, batch {a.accuracy_batch}, vs the fp32 CPU `expected`):\n")
        print("| engine | precision | max abs diff | spearman | note |\n|---|---|---|---|---|")
        for r in acc:
            print(f"| {r['engine']} | {r['precision']} | {fmt(r.get('max_abs_diff'), '.2e')} | "
                  f"{fmt(r.get('spearman'), '.6f')} | {r['note'].replace('|', '/')} |")


def main(argv=None):
    a = parse_args(sys.argv[1:] if argv is None else argv)
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False  # fp32 means fp32
    mach = machine(a)
    log(f"{mach['device_name']}, torch {mach['torch']}, free memory {mach['mem_free_gb']:.1f} GB; "
        f"engines {a.engines}; luminal {a.dlrm}; logs in {a.log_dir}")
    if "luminal" in a.engines and not os.access(a.dlrm, os.X_OK):
        log(f"no executable luminal binary at {a.dlrm}: its rows will fail")
    acc = accuracy(a) if a.accuracy else []
    cells = []
    for size in a.sizes:
        for precision in a.precisions:
            def cell(s, p, batch, eng):
                fl = floor(config(a, s, max(batch, 1)), max(batch, 1), p, mach["peaks"])
                return dict(size=s, precision=p, batch=batch, engine=eng, floor_us=fl[0], bound=fl[1],
                            flops=fl[2], bytes=fl[3])
            why = fits(a, size, precision, mach)
            if why:
                log(f"{size} {precision}: {why}")
                cells += [dict(cell(size, precision, b, e), note=why) for b in a.batches for e in a.engines]
                continue
            if precision in QUANTIZED:
                why = "no int8 EmbeddingBag in PyTorch on CUDA here (FBGEMM's TBE not installed)"
                if precision == "fp8":
                    why += " and no fp8 DLRM-v2 written with torch._scaled_mm (bench/fp8_torch.py: the GEMMs)"
                cells += [dict(cell(size, precision, b, e), note=why + ": see its bf16 rows") for b in a.batches
                          for e in a.engines if e != "luminal"]
            elif any(e != "luminal" for e in a.engines):
                cells += pytorch_cells(a, size, precision, cell)
            if "luminal" in a.engines:
                cells += luminal_cells(a, size, precision, cell)
    skipped = sum("--time-budget" in (c.get("note") or "") for c in cells)
    if skipped:
        log(f"--time-budget {a.time_budget:.0f} s: {skipped} cells skipped")
    report(a, mach, cells, acc)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"machine": mach, "args": vars(a), "cells": cells, "accuracy": acc,
                       "elapsed_s": time.perf_counter() - T0}, f, indent=1)
        log(f"wrote {a.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
