"""ATen translator, reductions and scans (ops_reduce.cpp, ops_scan.cpp) against eager."""
import pytest
import torch

from aten_check import check, refused
from aten_more import check_at, dyn, seq, specials

INF, NAN = float("inf"), float("nan")


def ints(*shape, dtype=torch.int64):
    torch.manual_seed(sum(shape))
    return torch.randint(-9, 10, shape).to(dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64, torch.int32, torch.bool,
                                   torch.float16], ids=str)
def test_sum_forms(dtype):
    torch.manual_seed(0)
    x = (torch.randn(3, 4, 5) * 4).to(dtype)
    t = 2e-3 if dtype == torch.float16 else 1e-5
    check(lambda x: (x.sum(), x.sum(1), x.sum((0, 2)), x.sum(-1, keepdim=True), x.sum((0, 1, 2)),
                     x.sum(dim=[]), torch.sum(x, 1, dtype=torch.float64)), x, atol=t, rtol=t)


def test_sum_dynamic():
    check_at(lambda x: (x.sum(0), x.sum(1, keepdim=True), x.sum()), torch.randn(3, 4),
             more=[(torch.randn(8, 4),)], dynamic_shapes=dyn({0: seq("b")}))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.float64], ids=str)
def test_mean(dtype):
    torch.manual_seed(1)
    x = torch.randn(3, 4, 6).to(dtype)
    t = {torch.float16: 1e-3, torch.bfloat16: 8e-3}.get(dtype, 1e-5)
    check(lambda x: (x.mean(), x.mean(1), x.mean((0, 2), keepdim=True), x.mean(-1)), x, atol=t, rtol=t)
    check(lambda i: i.mean(0, dtype=torch.float32), ints(3, 4))


def test_mean_dynamic_dims():
    check_at(lambda x: (x.mean(0), x.mean((0, 1)), x.mean(-1, keepdim=True)), torch.randn(3, 5),
             more=[(torch.randn(7, 5),)], dynamic_shapes=dyn({0: seq("b")}))


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.int32, torch.uint8, torch.bool,
                                   torch.int8], ids=str)
def test_amax_amin_max_min(dtype):
    x = ints(3, 4, 5, dtype=dtype)
    check(lambda x: (x.amax(1), x.amin((0, 2), keepdim=True), x.amax(), x.amin(), x.max(), x.min(),
                     x.max(1), x.min(-1, keepdim=True), x.amax(dim=[])), x, atol=0, rtol=0)


def test_extremes_with_nan_inf_and_int_limits():
    x = specials().reshape(4, 5)
    check_at(lambda x: (x.amax(1), x.amin(0), x.max(1), x.min(0), x.argmax(1), x.argmin(0), x.max()),
             x, equal_nan=True, atol=0, rtol=0)
    lo, hi = torch.iinfo(torch.int64).min, torch.iinfo(torch.int64).max
    i = torch.tensor([[lo, 0, hi], [3, lo, lo]])
    check(lambda i: (i.amin(1), i.amax(1), i.min(0), i.argmin(1)), i, atol=0, rtol=0)


def test_arg_extremes_first_occurrence():
    x = torch.tensor([[1, 3, 3, 0], [2, 2, 2, 2], [0, -1, 5, 5]])
    check(lambda x: (x.argmax(1), x.argmin(1), x.argmax(0, keepdim=True), x.argmax(), x.argmin(),
                     torch.argmax(x, keepdim=True), x.max(1).indices, x.min(0).indices), x)
    f = x.float()
    check(lambda f: (f.argmax(1), f.argmin(0), f.argmax()), f)


def test_arg_extremes_dynamic():
    torch.manual_seed(3)
    check_at(lambda x: (x.argmax(0), x.argmin(1), x.max(0)), torch.randn(4, 3),
             more=[(torch.randn(9, 3),)], dynamic_shapes=dyn({0: seq("b")}))


@pytest.mark.parametrize("dtype", [torch.bool, torch.int64, torch.float32], ids=str)
def test_any_all(dtype):
    x = torch.tensor([[[0, 1], [0, 0]], [[2, 3], [1, 1]], [[0, 0], [0, 0]]]).to(dtype)
    check(lambda x: (x.any(), x.all(), x.any(1), x.all(-1), x.any((0, 2)), x.all(0, keepdim=True),
                     torch.any(x, dim=(1, 2), keepdim=True)), x)


def test_any_all_nan_is_true():
    x = torch.tensor([[NAN, 0.0], [0.0, 0.0]])
    check(lambda x: (x.any(1), x.all(0)), x)


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.int32], ids=str)
def test_prod(dtype):
    x = torch.tensor([[1, 2, 3, -1, 2, 5, 1], [-2, 1, 1, 3, 2, 2, -1], [0, 4, 1, 1, 1, 1, 2]]).to(dtype)
    check(lambda x: (x.prod(), x.prod(1), x.prod(0, keepdim=True), x[:, :1].prod(1), x[:, :6].prod(-1)),
          x, atol=1e-6, rtol=1e-6)


def test_prod_refuses_symbolic_dim():
    from aten_check import Fn
    import luminal

    with pytest.raises(ValueError, match=r"aten\.prod\.dim_int.*symbolic size"):
        luminal.compile(Fn(lambda x: x.prod(0)), (torch.randn(3, 2),), dynamic_shapes=dyn({0: seq("b")}))


def test_var_std():
    torch.manual_seed(4)
    x = torch.randn(3, 5, 4) * 3 + 1
    check(lambda x: (x.var(1), x.std(), x.var(1, unbiased=False), x.std((0, 2), keepdim=True),
                     torch.var(x, -1, correction=2), torch.std(x, correction=0)), x, atol=1e-5, rtol=1e-5)
    check_at(lambda x: (x.var(0), x.std(1)), x[0], more=[(torch.randn(9, 4),)],
             dynamic_shapes=dyn({0: seq("b")}), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.bool, torch.float32, torch.float64],
                         ids=str)
def test_cumsum(dtype):
    x = ints(3, 11, dtype=dtype) if dtype != torch.bool else ints(3, 11) > 0
    check(lambda x: (x.cumsum(1), x.cumsum(0), x.cumsum(-1, dtype=torch.float64)), x, atol=1e-5, rtol=1e-5)


def test_cumsum_special_values():
    x = torch.tensor([[1.0, INF, 2.0, -INF, 3.0], [-INF, 1.0, 1.0, 1.0, 1.0], [NAN, 1.0, 0.0, 1.0, 2.0]])
    check_at(lambda x: x.cumsum(1), x, equal_nan=True, atol=0, rtol=0)


def test_cumsum_dynamic_int_mask():
    # The mask builder's form: cumsum over a dynamic sequence of an int64 attention mask.
    am = torch.tensor([[0, 0, 1, 1, 1], [1, 1, 1, 1, 1]])
    check_at(lambda am: am.cumsum(-1) - 1, am, more=[(torch.randint(0, 2, (2, 9)),), (am[:, :2],)],
             dynamic_shapes=dyn({1: seq("s")}), atol=0, rtol=0)
    x = torch.tensor([[1.0, INF, 2.0], [-INF, 1.0, 1.0]])
    check_at(lambda x: x.cumsum(1), x, more=[(torch.randn(2, 7),)], dynamic_shapes=dyn({1: seq("s")}),
             equal_nan=True, atol=1e-6, rtol=1e-6)


def test_diff():
    x = torch.tensor([[1, 4, 9, 16, 25], [0, -1, 5, 5, 2]])
    check(lambda x: (torch.diff(x), torch.diff(x, dim=0), torch.diff(x, n=2), torch.diff(x, n=3, dim=1),
                     torch.diff(x, prepend=x[:, :1], append=x[:, :2])), x, atol=0, rtol=0)
    f = torch.randn(3, 6)
    check(lambda f: (torch.diff(f, dim=-1), torch.diff(f, n=2, dim=0), torch.diff(f, prepend=f[:1], dim=0)), f)
    b = torch.tensor([[True, False, False, True], [True, True, False, False]])
    check(lambda b: (torch.diff(b), torch.diff(b, dim=0)), b)


def test_diff_dynamic():
    # find_packed_sequence_indices (transformers): diff of position ids, != 1, cumsum.
    def packed(pos):
        first = pos[:, :1] - 1
        return (torch.diff(pos, dim=-1, prepend=first) != 1).cumsum(-1) - 1

    pos = torch.tensor([[0, 1, 2, 0, 1, 0]])
    check_at(packed, pos, more=[(torch.tensor([[0, 1, 0, 1, 2, 3, 4, 0, 1]]),)],
             dynamic_shapes=dyn({1: seq("s")}), atol=0, rtol=0)
