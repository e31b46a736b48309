"""ATen translator, conversions and inference no-ops (ops_convert.cpp) against eager."""
import pytest
import torch

from aten_check import check, refused
from aten_more import check_at, dyn, seq, specials

DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64, torch.int32,
          torch.int8, torch.uint8, torch.bool]


@pytest.mark.parametrize("dst", DTYPES, ids=str)
@pytest.mark.parametrize("src", [torch.float32, torch.int64, torch.bool, torch.float16], ids=str)
def test_to_dtype(src, dst):
    x = torch.tensor([[0.0, 1.0, -1.0, 2.75], [-2.75, 100.5, 7.0, -0.25]])
    if dst == torch.uint8 or src == torch.uint8:
        x = x.abs()  # float -> uint8 of negatives is undefined in C (and torch)
    x = x.to(src)
    check(lambda x: (x.to(dst), x.to(dtype=dst, copy=True), x.type(dst)), x, atol=0, rtol=0)


def test_to_forms_and_type_as():
    x, i = torch.randn(2, 3), torch.arange(6).reshape(2, 3)
    check(lambda x, i: (x.to("cpu"), x.to("cpu", torch.float64), x.to(i), x.type_as(i), i.type_as(x),
                        x.double().half().float(), i.float(), x.bool(), i.to(torch.bool), x.to(x)), x, i)


def test_float_to_bool_nan_and_to_int_truncation():
    x = specials()
    finite = torch.cat([x[:14], x[17:]])  # float -> int of inf / NaN is undefined in C and torch
    check_at(lambda x, f: (x.bool(), f.long(), f.int(), (-f.abs()).to(torch.int8)), x, finite, atol=0, rtol=0)


def test_mask_builder_conversions_dynamic():
    # transformers' mask helpers: am.to(device, bool), to(dtype_layout), _assert_tensor_metadata.
    am = torch.tensor([[0, 1, 1, 1], [1, 1, 1, 1]])
    fn = lambda am: am.to("cpu", torch.bool) & am.to(dtype=torch.bool, device="cpu")  # noqa: E731
    check_at(fn, am, more=[(torch.randint(0, 2, (2, 7)),)], dynamic_shapes=dyn({1: seq("s")}))


def test_dropout_in_eval_is_identity():
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Dropout(0.5))
    x = torch.randn(3, 4)
    check(m, x)
    check(lambda x: torch.nn.functional.dropout(x, 0.3, training=False), x)


def test_dropout_in_training_is_refused():
    refused(lambda x: torch.nn.functional.dropout(x, 0.3, training=True), torch.randn(3, 4),
            match=r"aten\.dropout\.default.*train=True with p=0\.3 is random")


def test_alias_copy_with_size_checks():
    def f(x):
        n = x.shape[0]
        torch._check(n >= 2)
        torch._check(n * 2 < 1000)
        return torch.ops.aten.alias_copy(x) * 2

    check_at(f, torch.randn(3, 2), more=[(torch.randn(6, 2),)], dynamic_shapes=dyn({0: seq("b")}))


def test_native_dropout_in_eval_is_identity_with_a_full_mask():
    x = torch.randn(3, 4)
    check(lambda x: torch.ops.aten.native_dropout(x, 0.5, False), x)
    refused(lambda x: torch.ops.aten.native_dropout(x, 0.5, True), x,
            match=r"aten\.native_dropout\.default.*train=True with p=0\.5 is random")
