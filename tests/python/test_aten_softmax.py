"""ATen translator: softmax.int, _softmax, _safe_softmax, log_softmax.int, _log_softmax against
eager PyTorch (dims, dtypes, dtype=, masked -inf rows, the decomposed form) and their refusals."""
import pytest
import torch
import torch.nn.functional as F

from aten_check import check, exported_ops, load_edited, on_device


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_softmax_and_log_softmax_dims(dim):
    torch.manual_seed(0)
    x = torch.randn(3, 4, 5) * 4
    assert {"aten.softmax.int", "aten.log_softmax.int"} <= exported_ops(
        lambda x: (F.softmax(x, dim), F.log_softmax(x, dim)), x)
    check(lambda x: (F.softmax(x, dim), F.log_softmax(x, dim)), x)


def test_decomposed_form_uses_underscore_ops():
    torch.manual_seed(1)
    x = torch.randn(4, 6)
    fn = lambda x: F.softmax(x, -1) + F.log_softmax(x, 0)  # noqa: E731
    assert {"aten._softmax.default", "aten._log_softmax.default"} <= exported_ops(fn, x, decompose=True)
    check(fn, x, decompose=True)


def test_masked_rows():
    # -inf entries get probability 0 and do not poison the row; large logits do not overflow.
    x = torch.tensor([[0.0, float("-inf"), 1.0], [1000.0, 1001.0, -1000.0], [float("-inf"), 2.0, float("-inf")]])
    check(lambda x: (F.softmax(x, -1), F.log_softmax(x, -1)), x)


def test_safe_softmax_all_masked_row_is_zero():
    x = torch.tensor([[0.0, float("-inf"), 1.0], [float("-inf")] * 3, [-3.4e38, float("-inf"), -3.4e38]])
    fn = lambda x: torch.ops.aten._safe_softmax(x, -1)  # noqa: E731
    assert "aten._safe_softmax.default" in exported_ops(fn, x)
    got = check(fn, x)(on_device(x)).cpu()
    assert torch.equal(got[1], torch.zeros(3))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float64])
def test_dtypes(dtype):
    torch.manual_seed(2)
    x = (torch.randn(3, 7) * 3).to(dtype)
    tol = {torch.float16: 1e-3, torch.bfloat16: 8e-3, torch.float64: 1e-12}[dtype]
    check(lambda x: (F.softmax(x, -1), F.log_softmax(x, 1)), x, atol=tol, rtol=tol)


def test_dtype_argument_converts_first():
    torch.manual_seed(3)
    x = torch.randn(2, 5).to(torch.float16)
    i = torch.arange(10).reshape(2, 5)
    check(lambda x, i: (F.softmax(x, -1, dtype=torch.float32), F.log_softmax(i, -1, dtype=torch.float64)), x, i)


def test_zero_dim_tensor():
    check(lambda x: F.softmax(x, 0) + F.log_softmax(x, -1), torch.tensor(2.5))


def test_symbolic_rows():
    torch.manual_seed(4)
    x = torch.randn(6, 5)
    rows = torch.export.Dim("rows", min=2, max=64)
    compiled = check(lambda x: F.softmax(x, -1) * F.log_softmax(x, 0), x, dynamic_shapes=({0: rows},))
    y = on_device(torch.randn(9, 5))
    torch.testing.assert_close(compiled(y), F.softmax(y, -1) * F.log_softmax(y, 0))


def test_half_to_float_gives_f32():
    # CUDA graphs carry _softmax(x16, dim, half_to_float=True); eager CPU has no kernel for it,
    # so the expectation is the f32 softmax of the half input.
    torch.manual_seed(5)
    x = (torch.randn(3, 9) * 4).half()
    compiled = load_edited(lambda x: torch.ops.aten._softmax(x, -1, True), x, edit=lambda g: None)
    got = compiled(on_device(x)).cpu()
    assert got.dtype == torch.float32
    torch.testing.assert_close(got, F.softmax(x.float(), -1), atol=1e-6, rtol=1e-5)


def test_half_to_float_on_float_input_is_refused():
    # _softmax(x, dim, half_to_float=True) needs a half input (CUDA graphs use it); eager rejects
    # it for f32, so the exported graph is edited to carry it.
    def edit(graph):
        for n in graph.nodes:
            if n.target == torch.ops.aten._softmax.default:
                n.args = (n.args[0], n.args[1], True)

    with pytest.raises(ValueError, match=r"aten\._softmax.*half_to_float=True needs an f16/bf16 input"):
        load_edited(lambda x: torch.ops.aten._softmax(x, -1, False), torch.randn(2, 3), edit=edit)


def test_integer_softmax_without_dtype_is_refused():
    def edit(graph):
        for n in graph.nodes:
            if n.target == torch.ops.aten.softmax.int:
                n.args = (n.args[0], n.args[1])
                n.kwargs = {}

    with pytest.raises(ValueError, match=r"aten\.softmax\.int.*expects a float tensor, got i64"):
        load_edited(lambda i: F.softmax(i, -1, dtype=torch.float32), torch.arange(6).reshape(2, 3), edit=edit)
