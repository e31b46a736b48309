"""Helpers of the op-family tests beyond aten_check.check: NaN-aware comparison, dynamic shapes
run at several sizes, and inputs full of special values."""
import torch
from torch.export import Dim

import luminal
from aten_check import DEVICE, Fn, on_device, to_device_of


def dyn(*specs):
    """dynamic_shapes for a test function's positional inputs (Fn takes *args)."""
    return (tuple(specs),)


def check_at(fn, *inputs, more=(), dynamic_shapes=None, equal_nan=False, atol=1e-5, rtol=1e-5):
    """Compiles fn once for `inputs` and compares it with eager on `inputs` and on every input
    tuple in `more` (other sizes of the dynamic dims). NaN equals NaN when equal_nan."""
    module = (fn if isinstance(fn, torch.nn.Module) else Fn(fn)).to(DEVICE).eval()
    inputs = on_device(inputs)
    with torch.no_grad():
        compiled = luminal.compile(module, inputs, dynamic_shapes=dynamic_shapes)
        for args in (inputs, *(on_device(m) for m in more)):
            got = compiled(*args)
            torch.testing.assert_close(got, to_device_of(module(*args), got), atol=atol, rtol=rtol,
                                       equal_nan=equal_nan)
    return compiled


def specials(dtype=torch.float32):
    """Values that break naive lowerings: signed zeros, halves, infinities, NaN, large and tiny."""
    v = [0.0, -0.0, 0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 1.0, -1.0, 3.7, -3.7, 1e6 + 0.5, -7.25,
         float("inf"), float("-inf"), float("nan"), 1e-30, 123456.75, -2.0]
    return torch.tensor(v, dtype=dtype)


def seq(name="s", lo=2, hi=64):
    """A named dynamic dim."""
    return Dim(name, min=lo, max=hi)
