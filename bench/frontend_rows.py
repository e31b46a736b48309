"""The PyTorch-frontend rows of bench.py: the same torch model through luminal.compile (AOT via
torch.export) and through torch.compile(backend=luminal.backend), CUDA tensors bound zero-copy,
with outputs "fresh" (the default: new tensors per call) and "reuse" (views of the module's own
outputs; each result is dropped before the next call), beside dynamo's floor (a backend that
returns a cached result). Setup time per row = export + translate + compile + the warm-up calls
(what a user waits for); compile_s is luminal.compile's own time (no call yet)."""
import time


def _floor_backend(gm, example_inputs):
    out = gm(*example_inputs)  # computed once: each call then costs dynamo's guards and dispatch
    return lambda *args: out


def frontend_rows(model, inputs, args):
    """Yields (name, fn or exception, setup seconds, extra row fields)."""
    try:
        import luminal
    except Exception as e:  # noqa: BLE001 - a missing package is a table row, not a crash
        yield "luminal.compile (AOT)", e, 0.0, {}
        return
    import torch

    precision = args.precision if args.precision in ("fp32", "tf32", "bf16") else None
    if precision is None:
        yield "luminal.compile (AOT)", ValueError(f"the frontend has no precision {args.precision}"), 0.0, {}
        return
    for outputs in ("fresh", "reuse"):
        name = f"luminal.compile ({outputs})"
        t0 = time.perf_counter()
        try:
            aot = luminal.compile(model, inputs, precision=precision, outputs=outputs)
            compile_s = time.perf_counter() - t0
            for _ in range(3):
                aot(*inputs)
            torch.cuda.synchronize()
            stats = aot.stats()
            yield name, (lambda aot=aot: aot(*inputs)), time.perf_counter() - t0, {
                "kernels": stats["kernels"], "rules": stats["rules"], "compile_s": compile_s}
        except Exception as e:  # noqa: BLE001
            yield name, e, time.perf_counter() - t0, {}
    for name, backend, opts in (("dynamo floor (cached result)", _floor_backend, None),
                                ("luminal.backend (fresh)", luminal.backend, None),
                                ("luminal.backend (reuse)", luminal.backend, {"outputs": "reuse"})):
        t0 = time.perf_counter()
        try:
            torch._dynamo.reset()
            jit = torch.compile(model, backend=backend, options=opts) if opts else torch.compile(model, backend=backend)
            for _ in range(3):
                jit(*inputs)
            torch.cuda.synchronize()
            yield name, (lambda jit=jit: jit(*inputs)), time.perf_counter() - t0, {}
        except Exception as e:  # noqa: BLE001
            yield name, e, time.perf_counter() - t0, {}
