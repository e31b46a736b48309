"""ATen translator: layer_norm, native_layer_norm (out, mean, rstd), rms_norm, _fused_rms_norm
against eager PyTorch (affine or not, several trailing dims, dtypes, both export forms)."""
import pytest
import torch
import torch.nn.functional as F

from aten_check import check, exported_ops, load_edited, on_device


@pytest.mark.parametrize("affine", [True, False])
@pytest.mark.parametrize("shape", [(8,), (3, 8)])
def test_layer_norm(shape, affine):
    torch.manual_seed(0)
    x = torch.randn(2, 5, *shape) * 3 + 1
    m = torch.nn.LayerNorm(shape, elementwise_affine=affine, eps=1e-4)
    if affine:
        with torch.no_grad():
            m.weight.normal_()
            m.bias.normal_()
    assert "aten.layer_norm.default" in exported_ops(m, x)
    check(m, x)
    assert "aten.native_layer_norm.default" in exported_ops(m, x, decompose=True)
    check(m, x, decompose=True)


def test_layer_norm_weight_without_bias():
    torch.manual_seed(1)
    x, w = torch.randn(4, 6), torch.randn(6)
    check(lambda x, w: F.layer_norm(x, (6,), w, None, 1e-5), x, w)


def test_native_layer_norm_mean_and_rstd():
    torch.manual_seed(2)
    x, w, b = torch.randn(3, 4, 5), torch.randn(4, 5), torch.randn(4, 5)
    fn = lambda x, w, b: torch.ops.aten.native_layer_norm(x, [4, 5], w, b, 1e-5)  # noqa: E731
    assert "aten.native_layer_norm.default" in exported_ops(fn, x, w, b)
    check(fn, x, w, b)


def test_layer_norm_of_transposed_input():
    # The normalized dims of a transposed view are not contiguous: merged by a copy.
    torch.manual_seed(3)
    x = torch.randn(4, 3, 6)
    check(lambda x: F.layer_norm(x.transpose(0, 2), (3, 4)), x)


@pytest.mark.parametrize("eps", [None, 1e-3])
@pytest.mark.parametrize("shape", [(16,), (2, 8)])
def test_rms_norm(shape, eps):
    torch.manual_seed(4)
    x = torch.randn(3, *shape) * 0.01  # small values make eps matter
    w = torch.randn(shape)
    fn = lambda x, w: F.rms_norm(x, shape, w, eps) + F.rms_norm(x, shape, None, eps)  # noqa: E731
    assert "aten.rms_norm.default" in exported_ops(fn, x, w)
    check(fn, x, w)
    check(fn, x, w, decompose=True)


def test_fused_rms_norm_outputs():
    torch.manual_seed(5)
    x, w = torch.randn(4, 8), torch.randn(8)
    fn = lambda x, w: torch.ops.aten._fused_rms_norm(x, [8], w, 1e-6)  # noqa: E731
    assert "aten._fused_rms_norm.default" in exported_ops(fn, x, w)
    check(fn, x, w)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_low_precision_computes_in_f32(dtype):
    torch.manual_seed(6)
    x = (torch.randn(4, 32) * 5).to(dtype)
    w, b = torch.randn(32).to(dtype), torch.randn(32).to(dtype)
    tol = {torch.float16: 2e-3, torch.bfloat16: 1.6e-2}[dtype]
    check(lambda x, w, b: F.layer_norm(x, (32,), w, b), x, w, b, atol=tol, rtol=tol)
    check(lambda x, w: F.rms_norm(x, (32,), w), x, w, atol=tol, rtol=tol)
    check(lambda x, w, b: torch.ops.aten.native_layer_norm(x, [32], w, b, 1e-5), x, w, b, atol=tol, rtol=tol)


def test_symbolic_batch():
    torch.manual_seed(7)
    m = torch.nn.LayerNorm(8)
    batch = torch.export.Dim("batch", min=2, max=32)
    compiled = check(m, torch.randn(4, 8), dynamic_shapes=({0: batch},))
    y = on_device(torch.randn(11, 8))
    torch.testing.assert_close(compiled(y), m(y).detach())


def test_integer_input_is_refused():
    # No eager program normalizes integers; the exported input is retyped to carry one.
    def edit(graph):
        for n in graph.nodes:
            if n.op == "placeholder":
                val = n.meta["val"]
                with val.fake_mode:
                    n.meta["val"] = torch.empty(val.shape, dtype=torch.int64)

    with pytest.raises(ValueError, match=r"aten\.layer_norm.*float input, got i64"):
        load_edited(lambda x: F.layer_norm(x, (3,)), torch.randn(2, 3), edit=edit)


def test_mismatched_normalized_shape_is_refused():
    def edit(graph):
        for n in graph.nodes:
            if n.target == torch.ops.aten.layer_norm.default:
                n.args = (n.args[0], [4])

    with pytest.raises(ValueError, match=r"normalized_shape \[4\] does not match the trailing dims of \[2, 3\]"):
        load_edited(lambda x: F.layer_norm(x, (3,)), torch.randn(2, 3), edit=edit)
