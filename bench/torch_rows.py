"""PyTorch side of the benchmarks at a given precision: the model loaded from the exported weights,
precision switches (tf32 flags, bf16 casts), CUDA-graph replay and torch.compile wrappers."""
import contextlib
import os
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples", "dlrm"))
import export as dlrm_export  # noqa: E402
import safetensors_stream as sst  # noqa: E402


@contextlib.contextmanager
def precision_mode(precision):
    """tf32: cuBLAS and cuDNN may use TF32 for fp32 matmuls inside the block; other modes: exact fp32
    matmuls (the flags are restored on exit)."""
    old = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
    on = precision == "tf32"
    torch.backends.cuda.matmul.allow_tf32 = on
    torch.backends.cudnn.allow_tf32 = on
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = old


def load_model(cfg, weights_path, device="cuda", progress=print):
    """The fp32 DLRM with the exported weights (bf16 tables upcast), tables streamed from the
    memory-mapped file to the device one at a time."""
    def mlp(prefix, widths):
        m = dlrm_export._mlp(widths, sigmoid_last=prefix == "top_l")
        sd = {}
        for name in m.state_dict():
            arr, _ = sst.open_tensor(weights_path, f"{prefix}.{name}")
            sd[name] = torch.from_numpy(arr.copy())
        m.load_state_dict(sd)
        return m

    t0 = time.perf_counter()
    tables = []
    for table in sst.open_tables(weights_path, len(cfg.ln_emb)):
        tables.append(sst.to_torch(table).to(device).float())
    model = dlrm_export.DLRM(mlp("bot_l", cfg.ln_bot), mlp("top_l", cfg.ln_top), tables, cfg.mode)
    model = model.to(device).eval()
    progress(f"[torch] model on {device} in {time.perf_counter() - t0:.1f} s")
    return model


def device_inputs(cfg, device="cuda"):
    """The exported inputs (make_inputs is deterministic) on the device."""
    return dlrm_export.make_inputs(cfg, device)


def cast_model(model, precision):
    """The model a PyTorch row runs: bf16 (and int8's stand-in) is a bf16 copy of the model and tables;
    fp32/tf32 use the fp32 model itself (tf32 is a flag, precision_mode)."""
    if precision in ("bf16", "int8"):
        import copy
        return copy.deepcopy(model).to(torch.bfloat16)
    return model


def cast_inputs(inputs, precision):
    """dense_x in the row's dtype; indices and offsets unchanged."""
    dense_x, idx, off = inputs
    return (dense_x.to(torch.bfloat16) if precision in ("bf16", "int8") else dense_x, idx, off)


def cuda_graph(model, inputs):
    """Captures one eager forward in a CUDA graph; returns a function replaying it (static output)."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            model(*inputs)
    torch.cuda.current_stream().wait_stream(s)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = model(*inputs)

    def replay():
        graph.replay()
        return out

    return replay


def compiled(model, inputs, mode):
    """torch.compile(model, mode) warmed up (compile + cudagraph trees); returns the call."""
    torch._dynamo.reset()
    c = torch.compile(model, mode=None if mode == "default" else mode)
    for _ in range(3):
        c(*inputs)
    torch.cuda.synchronize()
    return lambda: c(*inputs)


def error_text(e):
    """One line for a table cell from an exception."""
    first = (str(e).strip().splitlines() or [""])[0]
    return f"{type(e).__name__}: {first[:300]}"
