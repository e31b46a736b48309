"""ATen translator, unary math and powers (ops_math.cpp) against eager PyTorch."""
import pytest
import torch

from aten_check import check, refused
from aten_more import check_at, dyn, seq, specials

FLOATS = [torch.float32, torch.float64, torch.float16, torch.bfloat16]
TOL = {torch.float32: 2e-6, torch.float64: 1e-12, torch.float16: 1e-3, torch.bfloat16: 8e-3}

UNARY = {
    "neg": torch.neg,
    "abs": torch.abs,
    "exp": torch.exp,
    "log": torch.log,
    "sqrt": torch.sqrt,
    "rsqrt": torch.rsqrt,
    "reciprocal": torch.reciprocal,
    "sin": torch.sin,
    "cos": torch.cos,
    "square": torch.square,
}


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("op", sorted(UNARY))
def test_unary_floats(op, dtype):
    torch.manual_seed(0)
    x = (torch.randn(3, 5) * 2).to(dtype)
    if op in ("log", "sqrt", "rsqrt"):
        x = x.abs() + 0.1
    t = TOL[dtype]
    check(UNARY[op], x, atol=t, rtol=t)


@pytest.mark.parametrize("op", sorted(UNARY))
def test_unary_special_values(op):
    # inf, -inf, NaN and signed zeros give what torch gives (NaN compared as NaN).
    check_at(UNARY[op], specials(), equal_nan=True, atol=1e-6, rtol=2e-6)


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.uint8, torch.bool], ids=str)
@pytest.mark.parametrize("op", ["exp", "log", "sqrt", "rsqrt", "reciprocal", "sin", "cos"])
def test_unary_int_inputs_promote_to_float(op, dtype):
    x = torch.arange(1, 9).reshape(2, 4).to(dtype)
    check(UNARY[op], x, atol=2e-6, rtol=2e-6)


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.int8, torch.uint8], ids=str)
def test_neg_abs_square_ints_exact(dtype):
    x = torch.tensor([[0, 1, -2, 7], [100, -100, 3, -1]]).to(dtype)
    check(lambda x: (torch.neg(x), torch.abs(x), torch.square(x)), x, atol=0, rtol=0)


def test_unary_dynamic_batch():
    x = torch.rand(4, 3) + 0.5
    fn = lambda x: torch.sqrt(x).exp() + torch.log(x).cos() - torch.rsqrt(x)  # noqa: E731
    check_at(fn, x, more=[(torch.rand(9, 3) + 0.5,), (torch.rand(2, 3) + 0.5,)],
             dynamic_shapes=dyn({0: seq("b")}))


@pytest.mark.parametrize("e", [0, 1, 2, 3, 4, 7, -1, -2, -3, 2.0, 3.0, -2.0])
def test_pow_integral_exponent_negative_bases(e):
    # Integral exponents multiply: exact for negative bases (x ** 2 of negatives, Llama RMSNorm).
    x = torch.tensor([[-3.0, -1.5, -0.5, 0.0], [0.5, 1.5, 2.0, -2.0]])
    check(lambda x: x**e, x, atol=1e-6, rtol=1e-6)


@pytest.mark.parametrize("e", [0.5, -0.5, 1.5, -1.5, 0.3, 2.7])
def test_pow_fractional_exponent(e):
    # Negative bases give NaN exactly where torch does; -inf is handled like +inf.
    check_at(lambda x: x**e, specials(), equal_nan=True, atol=1e-6, rtol=3e-6)


@pytest.mark.parametrize("e", [2, 3, -1, 0.5, 2.5])
def test_pow_special_values(e):
    check_at(lambda x: torch.pow(x, e), specials(), equal_nan=True, atol=1e-6, rtol=3e-6)


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.uint8], ids=str)
def test_pow_int_tensor_int_exponent_exact(dtype):
    x = torch.tensor([[0, 1, 2, 3], [5, 7, 9, 11]]).to(dtype)
    check(lambda x: (x**3, x**0, torch.pow(x, 2)), x, atol=0, rtol=0)
    if dtype != torch.uint8:
        check(lambda x: (-x) ** 3, x, atol=0, rtol=0)  # negative bases, odd power


def test_pow_int_tensor_float_exponent():
    x = torch.arange(6).reshape(2, 3)
    check(lambda x: (x**0.5, x**2.0, x**-1.0), x, atol=1e-6, rtol=1e-6)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16], ids=str)
def test_pow_tensor_tensor(dtype):
    b = torch.tensor([2.0, -2.0, -2.0, 0.0, 0.0, 1.0, 3.0, -0.5, 4.0, -1.0]).to(dtype)
    e = torch.tensor([3.0, 3.0, 2.0, 0.0, -1.0, 7.5, -2.0, 0.5, 0.25, 5.0]).to(dtype)
    t = TOL[dtype]
    check_at(torch.pow, b, e, equal_nan=True, atol=t, rtol=t)


def test_pow_tensor_tensor_special_values():
    x = specials()
    b, e = x.reshape(4, 5), x.reshape(5, 4).t().contiguous()
    check_at(torch.pow, b, e, equal_nan=True, atol=1e-6, rtol=3e-6)
    check_at(torch.pow, b, b, equal_nan=True, atol=1e-6, rtol=3e-6)


def test_pow_tensor_tensor_broadcast_and_promotion():
    b = torch.rand(3, 4) + 0.5
    e = torch.arange(4)  # int64 exponents promote to float32
    check(torch.pow, b, e, atol=1e-6, rtol=2e-6)
    check(lambda e, b: torch.pow(e, b), e, b, atol=1e-6, rtol=2e-6)


@pytest.mark.parametrize("base", [2.0, 0.5, -2.0, 0.0, 1.0, 10, 3])
def test_pow_scalar_base(base):
    e = torch.tensor([[-2.0, -1.0, 0.0, 0.5], [1.0, 2.0, 3.0, 2.5]])
    check_at(lambda e: base**e, e, equal_nan=True, atol=1e-6, rtol=2e-6)


def test_pow_refuses_int_tensor_powers():
    i = torch.arange(1, 5)
    refused(lambda i: torch.pow(i, i), i, match=r"aten\.pow\.Tensor_Tensor.*only float results")
    refused(lambda i: 2**i, i, match=r"aten\.pow\.Scalar.*only float results")


def test_pow_refuses_non_finite_exponent():
    refused(lambda x: x ** float("inf"), torch.rand(3), match=r"exponent inf is not supported")


ROUNDING = {"floor": torch.floor, "ceil": torch.ceil, "round": torch.round, "trunc": torch.trunc}


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16],
                         ids=str)
@pytest.mark.parametrize("op", sorted(ROUNDING))
def test_rounding_special_values(op, dtype):
    # Halves round to even; infinities and NaN pass through; huge values are already integral.
    x = torch.cat([specials(torch.float64), torch.tensor([2.0**52 + 1, -(2.0**60), 0.49999997])])
    check_at(ROUNDING[op], x.to(dtype), equal_nan=True, atol=0, rtol=0)


@pytest.mark.parametrize("op", sorted(ROUNDING))
def test_rounding_random_and_dynamic(op):
    torch.manual_seed(1)
    check_at(ROUNDING[op], torch.randn(5, 3) * 10, more=[(torch.randn(8, 3) * 100,)],
             dynamic_shapes=dyn({0: seq("b")}), atol=0, rtol=0)


@pytest.mark.parametrize("op", sorted(ROUNDING))
def test_rounding_ints_are_identity(op):
    check(ROUNDING[op], torch.tensor([[-3, 0, 7]]), atol=0, rtol=0)


@pytest.mark.parametrize("decimals", [1, 2, 3, -1, -2])
def test_round_decimals(decimals):
    torch.manual_seed(2)
    x = torch.randn(4, 6) * 300
    # x * 10^d is rounded as in torch; dividing by 10^d is a product with its reciprocal (1 ulp).
    check(lambda x: torch.round(x, decimals=decimals), x, atol=1e-4, rtol=1e-6)


def test_pow_refuses_int_to_negative_power():
    refused(lambda i: i**-1, torch.arange(1, 4), match=r"aten\.pow\.Tensor_Scalar.*negative power -1")


def test_round_refuses_absurd_decimals():
    refused(lambda x: torch.round(x, decimals=400), torch.rand(3), match=r"decimals=400 is out of range")
