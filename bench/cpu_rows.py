"""Helpers of bench_cpu.py: the DLRM shapes (examples/dlrm/export.py's DLRM and presets), the rows
(PyTorch eager, torch.compile, ONNX Runtime, luminal.compile), host-clock timing and the measured
CPU roofline (GEMM rate and copy bandwidth of this machine at this thread count)."""
import contextlib
import copy
import dataclasses
import io
import os
import statistics
import sys
import time
import warnings

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "examples", "dlrm"))
import export as dlrm_export  # noqa: E402
import export_v2  # noqa: E402
import roofline  # noqa: E402

MODELS = ("seed", "kaggle", "mlperf", "v2")
ROWS = ("eager", "compile", "ort", "luminal")
ROW_NAMES = {"eager": "pytorch eager", "compile": "torch.compile (inductor)", "ort": "onnxruntime (CPU EP)",
             "luminal": "luminal.compile"}
DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16}


class Skip(Exception):
    """A row that cannot run here (missing package, unsupported precision): a table row with a reason."""


def model_config(name, batch, mlperf_rows):
    """The DlrmConfig of a shape: seed as the repo's preset; kaggle with 26 tables of 100,000 rows (the
    preset's widths, not its 10M-row tables); mlperf with the Terabyte tables capped at mlperf_rows."""
    if name == "kaggle":
        return dlrm_export.from_preset("kaggle", batch, ln_emb=[100_000] * 26)
    if name == "mlperf":
        return dlrm_export.from_preset("mlperf", batch, max_rows=mlperf_rows)
    return dlrm_export.from_preset("seed", batch)


def build(name, mlperf_rows):
    """(cfg at batch 1, fp32 eval model): examples/dlrm's DLRM with its deterministic init; v2 is MLPerf's
    DLRM-v2 (export_v2.py: DCNv2 cross layers, multi-hot bags as per-key values / lengths) with its tables
    capped at mlperf_rows."""
    if name == "v2":
        cfg = export_v2.V2Config(**export_v2.PRESETS["dlrm-v2"], batch=1)
        cfg.rows = [min(r, mlperf_rows) for r in cfg.rows]
        return cfg, export_v2.build_model(cfg)
    cfg = model_config(name, 1, mlperf_rows)
    return cfg, dlrm_export.build_model(cfg)


def make_inputs(cfg, batch):
    """(dense_x fp32, indices int64 per table, offsets int64 = arange: one index per bag); v2: (dense
    features, values per key, lengths per key) with MLPerf's multi-hot sizes."""
    if isinstance(cfg, export_v2.V2Config):
        return export_v2.make_inputs(dataclasses.replace(cfg, batch=batch))
    return dlrm_export.make_inputs(dataclasses.replace(cfg, batch=batch))


def cast_inputs(inputs, precision):
    """dense_x in the row's dtype; indices and offsets unchanged."""
    dense_x, idx, off = inputs
    return dense_x.to(DTYPES[precision]), idx, off


def time_call(fn, warmup, iters):
    """Warm-up calls, then `iters` calls each timed by the host clock: median/mean/min in us."""
    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(iters):
        t0 = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t0) * 1e6)
    return {"median_us": statistics.median(samples), "mean_us": statistics.fmean(samples),
            "min_us": min(samples), "n": iters}


def as_tensor(out):
    """A row's output (tensor, tuple or numpy array) as an fp32 torch tensor."""
    if isinstance(out, (list, tuple)):
        out = out[0]
    if not isinstance(out, torch.Tensor):
        out = torch.from_numpy(out)
    return out.detach().float()


# ---- the rows: each returns a zero-argument call (inputs bound, created once) or raises Skip ----

def eager_row(model, inputs, precision, threads, device):
    """PyTorch eager (the bf16 row runs a bf16 copy of the model on bf16 dense inputs)."""
    return lambda: model(*inputs)


def compile_row(model, inputs, precision, threads, device):
    """torch.compile, inductor, default mode; compiled for this batch (dynamo reset first)."""
    torch._dynamo.reset()
    c = torch.compile(model)
    c(*inputs)
    return lambda: c(*inputs)


_ORT_FAILED = {}  # precision -> the reason, so an unsupported precision is not re-exported per cell


def ort_row(model, inputs, precision, threads, device):
    """ONNX Runtime, CPUExecutionProvider: torch.onnx.export (opset 18; the dynamo exporter, else the
    TorchScript one) to memory, intra-op threads = threads, inter-op 1."""
    try:
        import onnxruntime as ort
    except Exception as e:  # noqa: BLE001
        raise Skip(f"onnxruntime not importable ({type(e).__name__}: {e})") from None
    if precision in _ORT_FAILED:
        raise Skip(_ORT_FAILED[precision])
    proto, how = _onnx_bytes(model, inputs)
    opts = ort.SessionOptions()
    opts.intra_op_num_threads, opts.inter_op_num_threads = threads, 1
    opts.log_severity_level = 3  # no graph-rewrite warnings on stderr
    try:
        sess = ort.InferenceSession(proto, opts, providers=["CPUExecutionProvider"])
    except Exception as e:  # noqa: BLE001 - e.g. no bf16 Gemm kernel on the CPU EP
        _ORT_FAILED[precision] = f"ORT CPU EP cannot run the {precision} model: {_first_line(e)}"
        raise Skip(_ORT_FAILED[precision]) from None
    dense_x, idx, off = inputs
    flat = [dense_x, *idx, *off]
    names = [i.name for i in sess.get_inputs()]
    if len(names) != len(flat):
        raise Skip(f"the ONNX graph ({how} exporter) takes {len(names)} inputs, the model {len(flat)}")
    feed = {n: _numpy(t) for n, t in zip(names, flat)}
    fn = lambda: sess.run(None, feed)  # noqa: E731
    fn.note = f"{how} exporter" + _loop_note(proto)
    return fn


def _loop_note(proto):
    """'; N Loop nodes' when the export turned EmbeddingBag into ONNX Loops (one step per bag)."""
    try:
        import onnx
        loops = sum(n.op_type == "Loop" for n in onnx.load_from_string(proto).graph.node)
    except Exception:  # noqa: BLE001 - the note is optional
        return ""
    return f"; {loops} Loop nodes (EmbeddingBag runs one Loop step per bag)" if loops else ""


def _onnx_bytes(model, inputs):
    """The serialized ONNX model and which exporter made it; Skip when both exporters fail."""
    errors = []
    for dynamo in (True, False):
        try:
            with warnings.catch_warnings(), contextlib.redirect_stdout(sys.stderr):
                warnings.simplefilter("ignore")
                if dynamo:
                    prog = torch.onnx.export(model, inputs, dynamo=True, opset_version=18, verbose=False)
                    return prog.model_proto.SerializeToString(), "dynamo"
                buf = io.BytesIO()
                torch.onnx.export(model, inputs, buf, dynamo=False, opset_version=18)
                return buf.getvalue(), "torchscript"
        except Exception as e:  # noqa: BLE001
            errors.append(f"{'dynamo' if dynamo else 'torchscript'}: {_first_line(e)}")
    raise Skip("torch.onnx.export failed: " + "; ".join(errors))


def _numpy(t):
    """A CPU tensor as numpy (bf16 has no numpy dtype: ml_dtypes' bfloat16 when present)."""
    if t.dtype != torch.bfloat16:
        return t.contiguous().numpy()
    import ml_dtypes
    return t.contiguous().view(torch.int16).numpy().view(ml_dtypes.bfloat16)


def luminal_row(model32, inputs32, precision, threads, device):
    """luminal.compile(model, (dense, indices, offsets), device=device, precision=precision): the fp32
    model and inputs (precision='bf16' casts to bfloat16 inside); threads come from OMP_NUM_THREADS."""
    try:
        import luminal
    except Exception as e:  # noqa: BLE001
        raise Skip(f"luminal not importable ({type(e).__name__}: {e})") from None
    c = luminal.compile(model32, inputs32, device=device, precision=precision)
    c(*inputs32)
    return lambda: c(*inputs32)


ROW_FUNCS = {"eager": eager_row, "compile": compile_row, "ort": ort_row, "luminal": luminal_row}


def _first_line(e):
    text = (str(e).strip().splitlines() or [""])[0]
    return f"{type(e).__name__}: {text[:240]}"


def error_text(e):
    """One line for a table cell from an exception."""
    return _first_line(e)


def prepare(model32, precision):
    """The model PyTorch/ORT rows run: the fp32 model, or a bf16 deep copy."""
    return model32 if precision == "fp32" else copy.deepcopy(model32).to(DTYPES[precision])


# ---- roofline ----

def machine_rates(threads, budget_s=0.5):
    """This machine at torch's current thread count: best GEMM rate (FLOP/s) of a 2048x1024 @
    1024x1024 matmul per dtype, and copy bandwidth (bytes read + written / s) of a 256 MiB tensor."""
    def best(fn, min_reps=3):
        fn()
        times, t_end = [], time.perf_counter() + budget_s
        while len(times) < min_reps or time.perf_counter() < t_end:
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
        return min(times)

    out = {"threads": threads}
    m, k, n = 2048, 1024, 1024
    for p, dt in DTYPES.items():
        a, b = torch.randn(m, k).to(dt), torch.randn(k, n).to(dt)
        c = torch.empty(m, n, dtype=dt)
        out[f"gemm_{p}_flops"] = 2 * m * n * k / best(lambda: torch.matmul(a, b, out=c))
    src = torch.ones(64 << 20)
    dst = torch.empty_like(src)
    out["bandwidth_Bps"] = 2 * src.numel() * 4 / best(lambda: dst.copy_(src))
    return out


def v2_work(cfg, batch, precision):
    """DLRM-v2's (FLOPs, bytes) at a batch: MLP and cross-layer GEMMs (2 per layer: V then W) plus the bag adds;
    every weight once, the gathered rows (sum of the multi-hot sizes per sample), indices and lengths (int64), and
    the activations (MLP outputs, x0 and each cross layer's output) read once, in the row's dtype (int8: bf16
    dense parts, gathered rows of 1-byte codes plus an 8-byte scale and bias each)."""
    es = 2 if precision in ("bf16", "int8", "fp8") else 4
    n = (len(cfg.rows) + 1) * cfg.dim
    mlp = list(zip(cfg.ln_bot[:-1], cfg.ln_bot[1:])) + list(zip([n] + cfg.ln_top, cfg.ln_top + [1]))
    macs = sum(i * o for i, o in mlp) + cfg.cross_layers * 2 * n * cfg.cross_rank
    hots = sum(cfg.hots)
    flops = 2 * batch * macs + batch * hots * cfg.dim
    weights = macs + sum(o for _, o in mlp) + cfg.cross_layers * n
    acts = batch * (sum(cfg.ln_bot[1:]) + sum(cfg.ln_top) + 1 + n * (1 + cfg.cross_layers))
    row_bytes = cfg.dim + 8 if precision in ("int8", "fp8") else cfg.dim * es
    nbytes = (weights + acts) * es + batch * hots * row_bytes + batch * (hots + len(cfg.rows)) * 8
    return flops, nbytes


def floor(cfg, batch, precision, rates):
    """max(FLOPs / GEMM rate, bytes / bandwidth) in us. FLOPs and bytes from bench/roofline.py (MLP
    GEMMs + dot interaction + bag adds; MLP weights, gathered rows, indices/offsets, dense_x, output)
    plus every activation read once (MLP outputs, the interaction's T and Z pairs), in the row's dtype."""
    if isinstance(cfg, export_v2.V2Config):
        fl, nbytes = v2_work(cfg, batch, precision)
    else:
        c = {"m_spa": cfg.m_spa, "ln_emb": cfg.ln_emb, "ln_bot": cfg.ln_bot, "ln_top": cfg.ln_top, "bag": cfg.bag,
             "index_dtype": "int64"}
        fl = roofline.flops(c, batch)
        n = len(cfg.ln_emb) + 1
        acts = batch * (sum(cfg.ln_bot[1:]) + sum(cfg.ln_top[1:]) + n * cfg.m_spa + n * (n - 1) // 2)
        nbytes = roofline.bytes_moved(c, batch, precision)["total"] + acts * (2 if precision == "bf16" else 4)
    compute_us = fl / rates[f"gemm_{precision}_flops"] * 1e6
    memory_us = nbytes / rates["bandwidth_Bps"] * 1e6
    return {"flops": fl, "bytes": nbytes, "compute_us": compute_us, "memory_us": memory_us,
            "floor_us": max(compute_us, memory_us), "bound": "compute" if compute_us >= memory_us else "memory"}
