"""ATen translator, creation ops (ops_creation.cpp) against eager, with static and symbolic sizes."""
import pytest
import torch

from aten_check import DEVICE, check, refused
from aten_more import check_at, dyn, seq

INF = float("inf")


def test_full_zeros_ones_empty():
    def f(x):
        return (x + torch.full((2, 3), 1.5, device=x.device), torch.zeros(2, 3, dtype=torch.int64), torch.ones(3, dtype=torch.bool),
                torch.full((2,), 7), torch.full((), -INF), torch.zeros(()), torch.full((2, 2), True),
                torch.full((3,), torch.iinfo(torch.int64).min), torch.ones(2, 3, dtype=torch.float16))
    check(f, torch.randn(2, 3), atol=0, rtol=0)


def test_empty_is_zeros():
    # torch.empty's contents are undefined; luminal fills zeros, so only shapes and dtypes compare.
    from aten_check import Fn
    import luminal

    fn = Fn(lambda x: (torch.empty(2, 3), x.new_empty((4,), dtype=torch.int32), torch.empty_like(x)))
    got = luminal.compile(fn, (torch.randn(5),))(torch.randn(5))
    for g, want in zip(got, [((2, 3), torch.float32), ((4,), torch.int32), ((5,), torch.float32)]):
        assert (tuple(g.shape), g.dtype) == want
        assert not g.any()


@pytest.mark.parametrize("dtype", [None, torch.float32, torch.int32, torch.float64, torch.int64], ids=str)
def test_like_and_new_forms(dtype):
    x = torch.randn(2, 3)

    def f(x):
        return (torch.full_like(x, 2.5, dtype=dtype), torch.zeros_like(x, dtype=dtype),
                torch.ones_like(x, dtype=dtype), x.new_ones(4, 1, dtype=dtype), x.new_zeros((2,), dtype=dtype),
                x.new_full((1, 3), 9, dtype=dtype))
    check(f, x, atol=0, rtol=0)


@pytest.mark.parametrize("args", [(5,), (1, 5), (0, 1, 0.25), (-3, 7, 2), (10, 0, -3), (0.5, 3.0),
                                  (1, 2.5, 0.1), (0, 1000, 7)], ids=str)
@pytest.mark.parametrize("dtype", [None, torch.float32, torch.int32, torch.float64, torch.float16], ids=str)
def test_arange(args, dtype):
    # torch's vectorized CPU kernel computes (start + step * i0) + step * k for float results, a
    # rounding away from start + step * i: float64 may differ by an ulp.
    t = 1e-15 if dtype == torch.float64 or (dtype is None and any(isinstance(a, float) for a in args)) else 0
    try:
        check(lambda x: torch.arange(*args, dtype=dtype), torch.zeros(1), atol=t, rtol=t)
    except RuntimeError as e:
        if "step must be nonzero" not in str(e):
            raise
        # torch 2.11's export (its meta kernel) casts a float step to the int dtype first; eager does not.
        pytest.skip(f"torch {torch.__version__} cannot export arange{args} as {dtype}: {e}")


def test_arange_symbolic_end_start_step():
    x = torch.randn(4, 3)
    fn = lambda x: (torch.arange(x.shape[0]), torch.arange(x.shape[0] * x.shape[1]).float(),  # noqa: E731
                    torch.arange(-x.shape[0], 2 * x.shape[0], 3), torch.arange(1, x.shape[0] + 1, dtype=torch.float32),
                    torch.arange(x.shape[0], dtype=torch.float32) * 0.5)
    check_at(fn, x, more=[(torch.randn(9, 3),), (torch.randn(2, 3),)], dynamic_shapes=dyn({0: seq("b")}),
             atol=0, rtol=0)


def test_creation_with_symbolic_sizes_and_fill():
    x = torch.randn(4, 6)

    def f(x):
        n, m = x.shape
        return (torch.zeros(n, 2), torch.ones(n * 2 + 1), x.new_ones(n, m // 2 + 2), torch.full((n,), n),
                torch.full((m, n), 1.5), x.new_full((2, n), 3), torch.zeros(max(n, m)),
                torch.scalar_tensor(n), x * n + m)
    # Exact on the CPU; on CUDA, NVRTC contracts x * n + m into one FMA (one rounding, eager two).
    tol = 0 if DEVICE == "cpu" else 1e-6
    check_at(f, x, more=[(torch.randn(7, 6),), (torch.randn(3, 8),)],
             dynamic_shapes=dyn({0: seq("n"), 1: seq("m")}), atol=tol, rtol=tol)


def test_scalar_tensor():
    check(lambda x: (x * torch.scalar_tensor(2.5), torch.scalar_tensor(3, dtype=torch.int64),
                     torch.scalar_tensor(-INF)), torch.randn(3), atol=0, rtol=0)


@pytest.mark.parametrize("k", [0, 1, -1, 3, -5])
def test_tril_triu(k):
    x = torch.randn(2, 4, 5)
    i = (x * 10).long()
    x[0, 0, 4] = INF  # above the diagonal: tril must give 0, not NaN
    x[1, 3, 0] = -INF
    check(lambda x, i: (torch.tril(x, k), torch.triu(x, k), torch.tril(x > 0, k), torch.triu(i, k)),
          x, i, atol=0, rtol=0)


def test_tril_dynamic_causal_mask():
    fn = lambda x: torch.ones(x.shape[0], x.shape[0], dtype=torch.bool).tril()  # noqa: E731
    check_at(fn, torch.randn(3), more=[(torch.randn(7),)], dynamic_shapes=dyn({0: seq("s")}))


def test_non_strided_layout_is_refused():
    refused(lambda x: x + torch.zeros(3, layout=torch.sparse_coo).to_dense().to(x.device), torch.randn(3),
            match=r"aten\.zeros\.default.*layout 1 is not supported \(only torch\.strided\)")
