"""Shared helpers of the ATen op tests: compile a function through luminal.compile and compare it
with eager PyTorch on the test device (LUMINAL_TEST_DEVICE=cpu|cuda; cpu runs the reference runtime)."""
import os
import tempfile

import pytest
import torch

import luminal

DEVICE = os.environ.get("LUMINAL_TEST_DEVICE", "cpu")


class Fn(torch.nn.Module):
    """Wraps a plain function as a module so torch.export can trace it."""

    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *args):
        return self.fn(*args)


def on_device(x):
    if isinstance(x, torch.Tensor):
        return x.to(DEVICE)
    if isinstance(x, (list, tuple)):
        return type(x)(on_device(v) for v in x)
    return x


def check(fn, *inputs, dynamic_shapes=None, atol=1e-5, rtol=1e-5, decompose=False, **compile_kwargs):
    """Compiles fn (a module or a function) for inputs, runs it, and asserts the result equals
    eager PyTorch's. decompose=True translates the run_decompositions() (core ATen) form.
    Returns the CompiledModule."""
    module = fn if isinstance(fn, torch.nn.Module) else Fn(fn)
    if module is not fn and dynamic_shapes is not None:
        dynamic_shapes = (tuple(dynamic_shapes),)  # Fn.forward takes *args
    module = module.to(DEVICE).eval()
    inputs = on_device(inputs)
    with torch.no_grad():
        expected = module(*inputs)
        compiled = luminal.compile(module, inputs, dynamic_shapes=dynamic_shapes, decompose=decompose,
                                   **compile_kwargs)
        got = compiled(*inputs)
    # A program's outputs live on its device; eager leaves creation ops without a device on the CPU.
    torch.testing.assert_close(got, to_device_of(expected, got), atol=atol, rtol=rtol)
    return compiled


def to_device_of(expected, got):
    """expected's tensors moved to the device of got's corresponding tensors (same structure)."""
    if isinstance(expected, torch.Tensor) and isinstance(got, torch.Tensor):
        return expected.to(got.device)
    if isinstance(expected, (list, tuple)) and isinstance(got, (list, tuple)) and len(expected) == len(got):
        return type(expected)(to_device_of(e, g) for e, g in zip(expected, got))
    if isinstance(expected, dict) and isinstance(got, dict):
        return {k: to_device_of(v, got.get(k)) for k, v in expected.items()}
    return expected


def refused(fn, *inputs, match, decompose=False):
    """Asserts that compiling fn for inputs fails with a luminal error matching `match`."""
    module = fn if isinstance(fn, torch.nn.Module) else Fn(fn)
    with pytest.raises((ValueError, TypeError, RuntimeError), match=match):
        luminal.compile(module.to(DEVICE).eval(), on_device(inputs), decompose=decompose)


def exported_ops(fn, *inputs, decompose=False, export_device=None):
    """The ATen targets ("aten.gelu.default", ...) torch.export emits for fn on inputs, so a test
    can assert that it exercises the op it is about (traced on export_device, default DEVICE)."""
    module = fn if isinstance(fn, torch.nn.Module) else Fn(fn)
    dev = export_device or DEVICE
    ep = torch.export.export(module.to(dev).eval(), tuple(x.to(dev) for x in inputs))
    if decompose:
        ep = ep.run_decompositions()
    return {str(n.target) for n in ep.graph.nodes if n.op == "call_function"}


def load_edited(fn, *inputs, edit, export_device=None):
    """Exports fn (traced on export_device, default DEVICE), lets edit(graph) change the exported
    FX graph (to carry an argument eager would reject), saves it and loads it with luminal.load
    on DEVICE: for testing the translator's refusals of arguments no eager program can produce."""
    module = fn if isinstance(fn, torch.nn.Module) else Fn(fn)
    dev = export_device or DEVICE
    ep = torch.export.export(module.to(dev).eval(), tuple(x.to(dev) for x in inputs))
    edit(ep.graph)
    with tempfile.TemporaryDirectory(prefix="luminal_test_") as tmp:
        path = os.path.join(tmp, "edited.pt2")
        torch.export.save(ep, path)
        return luminal.load(path, device=DEVICE)
