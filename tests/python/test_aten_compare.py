"""ATen translator, comparisons, logic, selects and clamps (ops_compare.cpp) against eager."""
import inspect

import pytest
import torch

from aten_check import check, refused
from aten_more import check_at, dyn, seq, specials

CMP = {"eq": torch.eq, "ne": torch.ne, "lt": torch.lt, "le": torch.le, "gt": torch.gt, "ge": torch.ge}
INF, NAN = float("inf"), float("nan")


@pytest.mark.parametrize("op", sorted(CMP))
def test_compare_tensor_tensor_with_nan_and_inf(op):
    x = specials()
    check(CMP[op], x, x.flip(0))
    check(CMP[op], x, x)  # NaN == NaN is False, NaN != NaN is True


@pytest.mark.parametrize(
    "a_dtype,b_dtype",
    [(torch.float32, torch.int64), (torch.int32, torch.int64), (torch.int64, torch.bool),
     (torch.float16, torch.float32), (torch.uint8, torch.int8), (torch.bfloat16, torch.float16)],
    ids=str)
@pytest.mark.parametrize("op", sorted(CMP))
def test_compare_promotes_operands(op, a_dtype, b_dtype):
    a = torch.tensor([[0, 1, 2, 3], [-1, 5, 2, 7]]).to(a_dtype)
    b = torch.tensor([0, 2, 2, 1]).to(b_dtype)
    check(CMP[op], a, b)


def test_compare_float32_rounding_of_int64():
    # torch compares int64 with float32 in float32: 16777217 == 16777216.0 is True.
    i = torch.tensor([16777217, 3], dtype=torch.int64)
    x = torch.tensor([16777216.0, 3.5])
    check(torch.eq, i, x)
    check(torch.lt, i, x)


@pytest.mark.parametrize("s", [2, 2.5, -1, True, float("inf")], ids=str)
@pytest.mark.parametrize("op", sorted(CMP))
def test_compare_scalar(op, s):
    x, i = torch.tensor([[1.0, 2.5, -INF, NAN]]), torch.tensor([[1, 2, 3, -4]])
    check(lambda x, i: (CMP[op](x, s), CMP[op](i, s)), x, i)


def test_compare_zero_dim_tensor_does_not_promote():
    # A 0-d float32 tensor against float16: the float16 (dimensioned) operand wins.
    h = torch.tensor([0.1, 0.2, 0.30004], dtype=torch.float16)
    z = torch.tensor(0.30004)
    check(lambda h, z: (h == z, h < z), h, z)


def test_compare_dynamic():
    check_at(lambda x, y: (x <= y, x != y), torch.randn(3, 4), torch.randn(4),
             more=[(torch.randn(7, 4), torch.randn(4))], dynamic_shapes=dyn({0: seq("b")}, None))


@pytest.mark.parametrize("dtype", [torch.bool, torch.float32, torch.int64], ids=str)
def test_logical_ops(dtype):
    a = torch.tensor([[0, 1, 2, 0], [NAN, 0, -1, 3]]).to(dtype) if dtype.is_floating_point else \
        torch.tensor([[0, 1, 2, 0], [5, 0, -1, 3]]).to(dtype)
    b = torch.tensor([1, 0, 3, 0]).to(dtype)
    check(lambda a, b: (torch.logical_not(a), torch.logical_and(a, b), torch.logical_or(a, b),
                        torch.logical_xor(a, b)), a, b)


def test_bitwise_on_bools():
    a = torch.tensor([[True, False, True], [False, False, True]])
    b = torch.tensor([True, True, False])
    check(lambda a, b: (a & b, a | b, a ^ b, ~a, torch.bitwise_and(a, b), torch.bitwise_or(a, b),
                        torch.bitwise_xor(a, b), torch.bitwise_not(b), a & True, a | False), a, b)


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.int8, torch.uint8], ids=str)
def test_bitwise_not_ints_exact(dtype):
    info = torch.iinfo(dtype)
    x = torch.tensor([0, 1, -1 if info.min < 0 else 7, info.min, info.max, 42]).to(dtype)
    check(torch.bitwise_not, x, atol=0, rtol=0)


def test_bitwise_and_of_ints_is_refused():
    refused(lambda i: i & 3, torch.arange(4), match=r"aten\.__and__\.Scalar.*only on bool")
    refused(lambda i: torch.bitwise_or(i, i), torch.arange(4), match=r"bitwise_or\.Tensor.*only on bool")
    refused(lambda i: i ^ i, torch.arange(4), match=r"__xor__\.Tensor.*only on bool")


def test_where_is_exact_for_infinities_and_nan():
    c = torch.tensor([True, False, True, False, True, False])
    x = torch.tensor([1.0, INF, -INF, NAN, 5.0, -INF])
    y = torch.tensor([-INF, 2.0, NAN, 4.0, INF, -INF])
    check_at(torch.where, c, x, y, equal_nan=True, atol=0, rtol=0)


def test_where_overloads_and_promotion():
    c = torch.tensor([[True, False, True], [False, True, False]])
    x, i = torch.randn(2, 3), torch.arange(3)
    check(lambda c, x, i: (torch.where(c, x, 0.0), torch.where(c, -INF, x), torch.where(c, 1.0, 0.0),
                           torch.where(c, x, i), torch.where(c, i, 7), torch.where(c, True, False),
                           torch.where(c[0], x, x * 2)), c, x, i, atol=0, rtol=0)


def test_masked_fill_attention_style():
    # finfo.min and -inf fills, broadcast mask, then a softmax-like reduction must stay exact.
    scores = torch.randn(2, 4, 5, 5)
    mask = torch.ones(5, 5, dtype=torch.bool).tril().logical_not()
    fmin = torch.finfo(torch.float32).min
    check(lambda s, m: (s.masked_fill(m, float("-inf")), s.masked_fill(m, fmin),
                        s.masked_fill(m, torch.tensor(-1.5)), s.masked_fill(m, 0)),
          scores, mask, atol=0, rtol=0)


def test_masked_fill_int_and_bool_and_dynamic():
    m = torch.tensor([[True, False], [False, True], [True, True]])
    check(lambda i, b, m: (i.masked_fill(m, -7), b.masked_fill(m, False)),
          torch.arange(6).reshape(3, 2), torch.ones(3, 2, dtype=torch.bool), m)
    check_at(lambda x, m: x.masked_fill(m, float("-inf")), torch.randn(3, 2), m,
             more=[(torch.randn(6, 2), torch.rand(6, 2) > 0.5)],
             dynamic_shapes=dyn({0: seq("b")}, {0: seq("b")}))


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.int32, torch.uint8, torch.bool],
                         ids=str)
def test_maximum_minimum(dtype):
    a = torch.tensor([[0, 3, -2, 7], [1, 1, 9, -5]])
    b = torch.tensor([1, -3, -2, 8])
    a, b = a.to(dtype), b.to(dtype)
    check(lambda a, b: (torch.maximum(a, b), torch.minimum(a, b)), a, b, atol=0, rtol=0)


def test_maximum_minimum_special_values_and_promotion():
    x = specials()
    check_at(lambda a, b: (torch.maximum(a, b), torch.minimum(a, b)), x, x.flip(0), equal_nan=True,
             atol=0, rtol=0)
    check(lambda a, i: (torch.maximum(a, i), torch.minimum(i, a)), torch.randn(4), torch.arange(4))
    lo = torch.iinfo(torch.int64).min
    check(torch.minimum, torch.tensor([lo, 0, 5]), torch.tensor([0, lo, -5]), atol=0, rtol=0)


def test_clamp_family():
    x = torch.cat([specials(), torch.randn(10) * 3])
    check_at(lambda x: (x.clamp(-1, 1), x.clamp(min=0), x.clamp(max=0.5), x.clamp_min(-0.25),
                        x.clamp_max(2), x.clamp(2, 1)), x, equal_nan=True, atol=0, rtol=0)
    check_at(lambda x, lo, hi: (x.clamp(lo, hi), torch.clamp(x, min=lo), torch.clamp(x, max=hi),
                                torch.clamp_min(x, lo), torch.clamp_max(x, hi)),
             x, x * 0 - 0.5, x * 0 + 0.5, equal_nan=True, atol=0, rtol=0)


def test_clamp_ints_and_promotion():
    i = torch.arange(-5, 5)
    check(lambda i: (i.clamp(-2, 3), i.clamp(min=0.5), i.clamp_max(2)), i, atol=0, rtol=0)


def _llama_mask_module(with_attention_mask):
    from transformers import LlamaConfig
    from transformers.masking_utils import create_causal_mask

    cfg = LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                      num_attention_heads=4, num_key_value_heads=2, attn_implementation="sdpa")

    # The signature moved between transformers releases (the GPU machine's is older than PyPI's):
    # inputs_embeds / input_embeds, cache / past_key_values, and cache_position where it is taken.
    params = inspect.signature(create_causal_mask).parameters

    class Mask(torch.nn.Module):
        def forward(self, emb, am, pos):
            kw = {"config": cfg, "attention_mask": am if with_attention_mask else None, "position_ids": pos}
            kw["inputs_embeds" if "inputs_embeds" in params else "input_embeds"] = emb
            kw["cache" if "cache" in params else "past_key_values"] = None
            if "cache_position" in params:
                kw["cache_position"] = torch.arange(emb.shape[1], device=emb.device)
            return create_causal_mask(**kw)

    return Mask()


def test_llama_causal_mask_with_padding():
    # transformers' mask builder: arange, le, new_ones, __and__, index (on the dynamic sequence
    # dim), to.device / to.dtype_layout, _assert_tensor_metadata.
    pytest.importorskip("transformers")
    am = torch.ones(2, 7, dtype=torch.int64)
    am[0, :3] = 0
    am9 = torch.ones(2, 9, dtype=torch.int64)
    am9[1, :5] = 0
    s = seq("s")
    check_at(_llama_mask_module(True), torch.randn(2, 7, 32), am, torch.arange(7).expand(2, 7).contiguous(),
             more=[(torch.randn(2, 9, 32), am9, torch.arange(9).expand(2, 9).contiguous())],
             dynamic_shapes=({1: s}, {1: s}, {1: s}))


def test_llama_packed_sequence_mask_dynamic():
    # No attention mask, packed position ids: diff, ne, cumsum, eq over a dynamic sequence.
    pytest.importorskip("transformers")
    m = _llama_mask_module(False)
    pos = torch.tensor([[0, 1, 2, 0, 1, 2, 3], [0, 1, 2, 3, 4, 5, 6]])
    pos9 = torch.tensor([[0, 1, 0, 1, 2, 0, 1, 2, 3], [0, 1, 2, 3, 4, 5, 6, 7, 8]])
    s = seq("s")
    check_at(m, torch.randn(2, 7, 32), torch.ones(2, 7, dtype=torch.int64), pos,
             more=[(torch.randn(2, 9, 32), torch.ones(2, 9, dtype=torch.int64), pos9)],
             dynamic_shapes=({1: s}, {1: s}, {1: s}))
