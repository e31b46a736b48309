"""What a call of the luminal Python package costs on the host, piece by piece.

    python3 bench/bench_python_overhead.py [--batch 2048] [--json out.json]

Rows (microseconds per call, best of 5 repeats of N calls):
- hot path, no C++: CompiledModule's CUDA call path (flatten, per-input pointer/shape/dtype/layout
  checks, stream query, return) with the C++ program replaced by a no-op, so it runs on any machine;
- its pieces: the generated flattener, the check of one input, the stream query, pytree for scale;
- with CUDA: the full luminal.compile call (enqueue only; no sync), latency incl. sync, the same
  through torch.compile(backend=luminal.backend), and eager PyTorch for reference;
- without CUDA: a full call of the CPU program (the reference runtime included).
The model is the seed DLRM_Net of tests/python (3 tables, 4-dim embeddings) at --batch.
"""
import argparse
import json
import os
import sys
import timeit

import torch
import torch.utils._pytree as pytree

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "python"))
import luminal  # noqa: E402
from dlrm_net import seed_inputs, seed_model  # noqa: E402


def best_us(fn, number):
    return min(timeit.repeat(fn, number=number, repeat=5)) / number * 1e6


class NoopProgram:
    """The C++ program's surface with every call a no-op (isolates the Python side)."""

    def __init__(self, real):
        self.inputs, self.outputs, self.device = real.inputs, real.outputs, "cuda"
        self._shapes = None

    def set_input_device(self, *a):
        pass

    def set_output_device(self, *a):
        pass

    def bind(self):
        return self._shapes

    def run(self, stream=0):
        pass


def hot_path_rows(fast, inputs, n):
    """The CUDA call path on CPU tensors with a no-op program: Python's own cost."""
    noop = NoopProgram(fast._program)
    noop._shapes = [list(fast(*inputs).shape)]  # the real output shape, from one real call
    m = luminal.CompiledModule(noop, fast._in_spec, fast._leaf_kinds, fast._out_spec, _tensor_device="cpu")
    m._scope["stream"] = lambda device: 0
    m(*inputs)  # binds once
    flat = m._flatten(inputs, {})
    t, p, s, d = flat[0], flat[0].data_ptr(), flat[0].shape, flat[0].dtype
    rows = {
        "hot path, no C++ (whole call)": best_us(lambda: m(*inputs), n),
        "generated flattener": best_us(lambda: m._flatten(inputs, {}), n),
        "pytree.tree_flatten (not used)": best_us(lambda: pytree.tree_flatten((inputs, {})), n),
        "one input's checks": best_us(
            lambda: t.data_ptr() != p or t.shape != s or t.dtype is not d or not t.is_contiguous(), n),
        "inputs checked": len(flat),
        "an empty Python call (for scale)": best_us(lambda: noop.run(0), n),
        # CompiledProgram::check_errors is a no-op on the CPU: the price of crossing into C++.
        "one call into C++ (nanobind, no work)": best_us(fast._program.check_errors, n),
    }
    if torch.cuda.is_available():
        rows["torch._C._cuda_getCurrentRawStream"] = best_us(lambda: torch._C._cuda_getCurrentRawStream(0), n)
    return rows


def device_rows(model, inputs, n):
    rows = {}
    fast = luminal.compile(model, inputs)
    for _ in range(10):
        fast(*inputs)
    torch.cuda.synchronize()
    rows["luminal.compile call, enqueue only"] = best_us(lambda: fast(*inputs), n)
    torch.cuda.synchronize()
    rows["luminal.compile call + sync"] = best_us(lambda: (fast(*inputs), torch.cuda.synchronize()), n)
    rows["luminal kernels"] = fast.stats()["kernels"]
    torch._dynamo.reset()
    jit = torch.compile(model, backend=luminal.backend)
    for _ in range(10):
        jit(*inputs)
    rows["torch.compile(backend=luminal.backend) + sync"] = best_us(
        lambda: (jit(*inputs), torch.cuda.synchronize()), n)
    torch._dynamo.reset()
    jit_reuse = torch.compile(model, backend=luminal.backend, options={"outputs": "reuse"})
    for _ in range(10):
        jit_reuse(*inputs)
    rows["torch.compile(backend=luminal.backend, outputs=reuse) + sync"] = best_us(
        lambda: (jit_reuse(*inputs), torch.cuda.synchronize()), n)
    torch._dynamo.reset()
    with torch.no_grad():
        rows["eager PyTorch + sync"] = best_us(lambda: (model(*inputs), torch.cuda.synchronize()), n)
    torch.cuda.synchronize()
    rows["torch.cuda.synchronize alone"] = best_us(torch.cuda.synchronize, n)
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, default=2048)
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    cuda = torch.cuda.is_available() and luminal.cuda_available()
    dev = "cuda" if cuda else "cpu"
    model = seed_model().to(dev)
    x, off, idx = seed_inputs(args.batch)
    inputs = (x.to(dev), off.to(dev), [i.to(dev) for i in idx])
    rows = {"device": luminal.cuda_device() if cuda else "cpu (reference runtime)", "batch": args.batch,
            "python": sys.version.split()[0], "torch": torch.__version__}
    cpu_inputs = (x, off, list(idx))
    rows.update(hot_path_rows(luminal.compile(seed_model(), cpu_inputs), cpu_inputs, args.calls))
    if cuda:
        rows.update(device_rows(model, inputs, args.calls))
    else:
        # The reference runtime is the oracle, not fast: time it at a small batch.
        sx, so, si = seed_inputs(64, seed=2)
        small = (sx, so, list(si))
        cpu = luminal.compile(model, small)
        rows["CPU program, full call at batch 64 (reference runtime)"] = best_us(lambda: cpu(*small), 20)
    width = max(len(k) for k in rows)
    for k, v in rows.items():
        print(f"{k:<{width}}  {v:.2f}" if isinstance(v, float) else f"{k:<{width}}  {v}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
