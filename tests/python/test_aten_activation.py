"""ATen translator: activations (gelu exact and tanh, erf, silu, tanh, hardtanh/relu6, leaky_relu,
elu, hardsigmoid/hardswish) against eager PyTorch, and erf's accuracy against float64."""
import pytest
import torch
import torch.nn.functional as F

import luminal
from aten_check import Fn, check, exported_ops, load_edited, on_device

# Include the piecewise ops' break points, both signs and saturated tails.
GRID = torch.cat([torch.linspace(-8, 8, 1601), torch.tensor([-3.0, -1.0, 0.0, 1.0, 3.0, 6.0, -1e-4, 1e-4])])


def run(fn, x):
    with torch.no_grad():
        return luminal.compile(Fn(fn), on_device((x,)))(on_device(x)).cpu()


@pytest.mark.parametrize("fn,target", [
    (lambda x: F.gelu(x), "aten.gelu.default"),
    (lambda x: F.gelu(x, approximate="tanh"), "aten.gelu.default"),
    (F.silu, "aten.silu.default"),
    (torch.tanh, "aten.tanh.default"),
    (lambda x: F.hardtanh(x, -2.0, 0.5), "aten.hardtanh.default"),
    (F.relu6, "aten.relu6.default"),
    (lambda x: F.leaky_relu(x, 0.2), "aten.leaky_relu.default"),
    (lambda x: F.elu(x, alpha=0.7), "aten.elu.default"),
    (F.selu, "aten.selu.default"),
    (lambda x: F.celu(x, 0.5), "aten.celu.default"),
    (F.hardsigmoid, "aten.hardsigmoid.default"),
    (F.hardswish, "aten.hardswish.default"),
    (torch.erf, "aten.erf.default"),
    (torch.erfc, "aten.erfc.default"),
], ids=["gelu", "gelu_tanh", "silu", "tanh", "hardtanh", "relu6", "leaky_relu", "elu", "selu", "celu", "hardsigmoid",
        "hardswish", "erf", "erfc"])
def test_activation_matches_eager(fn, target):
    assert target in exported_ops(fn, GRID)
    check(fn, GRID, atol=1e-6, rtol=1e-5)


def test_relu6_module_exports_hardtanh():
    # nn.ReLU6 is a Hardtanh(0, 6) module (F.relu6 above exports aten.relu6).
    assert "aten.hardtanh.default" in exported_ops(torch.nn.ReLU6(), GRID)
    check(torch.nn.ReLU6(), GRID)


def test_erf_bound_against_float64():
    # src/core/tensor/erf.cpp documents |erf - exact| <= 1.2e-7 in f32 (tools/fit_erf.py).
    x = torch.linspace(-6, 6, 200001)
    got = run(torch.erf, x).double()
    exact = torch.erf(x.double())
    assert (got - exact).abs().max().item() <= 1.2e-7


def test_gelu_exact_against_float64():
    # Through erfc, gelu keeps its digits in the negative tail, where eager's 1 + erf(x) cancels.
    # The float64 reference is x/2 * erfc(-x/sqrt 2): F.gelu in float64 cancels to 0 below -8.
    x = torch.linspace(-9, 9, 90001)
    got = run(F.gelu, x).double()
    xd = x.double()
    exact = 0.5 * xd * torch.erfc(-xd / 2**0.5)
    assert (got - exact).abs().max().item() <= 5e-7
    tail = x < -3
    rel = ((got - exact).abs() / exact.abs().clamp_min(1e-38))[tail]
    assert rel.max().item() <= 2e-5


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_gelu_low_precision(dtype):
    x = torch.linspace(-5, 5, 201).to(dtype)
    tol = {torch.float16: 2e-3, torch.bfloat16: 1.6e-2}[dtype]
    check(F.gelu, x, atol=tol, rtol=tol)
    check(lambda x: F.gelu(x, approximate="tanh"), x, atol=tol, rtol=tol)


def test_infinities():
    x = torch.tensor([float("-inf"), -2.0, 0.0, 2.0, float("inf")])
    check(torch.erf, x)
    check(torch.tanh, x)
    check(lambda x: F.hardtanh(x) + F.relu6(x) + F.leaky_relu(x) + F.hardsigmoid(x), x)
    check(F.elu, x)


def test_int_input_promotes():
    # torch.tanh / torch.erf of an integer tensor return float32 (the exported result dtype).
    i = torch.arange(-3, 4)
    check(lambda i: torch.tanh(i) + torch.erf(i), i)


def test_decomposed_form():
    x = torch.randn(4, 8)
    fn = lambda x: F.gelu(x) + F.silu(x) + F.hardtanh(x) + F.elu(x) + F.leaky_relu(x)  # noqa: E731
    check(fn, x, decompose=True, atol=1e-6, rtol=1e-5)


def test_int_hardtanh_and_relu6():
    i = torch.arange(-8, 9)
    check(lambda i: F.hardtanh(i, -2, 3) + F.relu6(i), i)


def test_bad_gelu_approximate_is_refused():
    # Eager rejects an unknown mode, so the exported graph is edited to carry one.
    def edit(graph):
        for n in graph.nodes:
            if n.target == torch.ops.aten.gelu.default:
                n.kwargs = {"approximate": "cubic"}

    with pytest.raises(ValueError, match=r"aten\.gelu.*approximate='cubic'"):
        load_edited(lambda x: F.gelu(x, approximate="tanh"), torch.randn(3), edit=edit)


def test_bool_hardtanh_is_refused():
    def edit(graph):
        for n in graph.nodes:
            if n.op == "placeholder":
                n.meta["val"] = n.meta["val"].bool()

    with pytest.raises(ValueError, match=r"aten\.hardtanh.*got bool"):
        load_edited(F.hardtanh, torch.randn(3), edit=edit)
