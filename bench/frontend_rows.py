"""The PyTorch-frontend rows of bench.py: the same torch model through luminal.compile (AOT via
torch.export) and through torch.compile(backend=luminal.backend), CUDA tensors bound zero-copy.
Setup time per row = export + translate + compile + the warm-up calls (what a user waits for)."""
import time


def frontend_rows(model, inputs, args):
    """Yields (name, fn or exception, setup seconds, extra row fields)."""
    try:
        import luminal
    except Exception as e:  # noqa: BLE001 - a missing package is a table row, not a crash
        for name in ("luminal.compile (AOT)", "luminal via torch.compile"):
            yield name, e, 0.0, {}
        return
    import torch

    precision = "tf32" if args.precision == "tf32" else "fp32"
    if args.precision not in ("fp32", "tf32"):
        err = ValueError(f"the PyTorch frontend runs fp32/tf32; {args.precision} is not offered yet")
        for name in ("luminal.compile (AOT)", "luminal via torch.compile"):
            yield name, err, 0.0, {}
        return
    t0 = time.perf_counter()
    try:
        aot = luminal.compile(model, inputs, precision=precision)
        for _ in range(3):
            aot(*inputs)
        torch.cuda.synchronize()
        setup = time.perf_counter() - t0
        stats = aot.stats()
        yield "luminal.compile (AOT)", (lambda: aot(*inputs)), setup, {"kernels": stats["kernels"],
                                                                          "rules": stats["rules"]}
    except Exception as e:  # noqa: BLE001
        yield "luminal.compile (AOT)", e, time.perf_counter() - t0, {}
    t0 = time.perf_counter()
    try:
        torch._dynamo.reset()
        jit = torch.compile(model, backend=luminal.backend)
        for _ in range(3):
            jit(*inputs)
        torch.cuda.synchronize()
        yield "luminal via torch.compile", (lambda: jit(*inputs)), time.perf_counter() - t0, {}
    except Exception as e:  # noqa: BLE001
        yield "luminal via torch.compile", e, time.perf_counter() - t0, {}
