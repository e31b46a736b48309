"""transformers' LlamaForCausalLM (tiny random configs) through luminal.compile: the logits equal
eager PyTorch's in both export forms (the default export and run_decompositions())."""
import pytest
import torch

from aten_check import check, exported_ops

transformers = pytest.importorskip("transformers")

BASE = dict(vocab_size=128, hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
            intermediate_size=128, max_position_embeddings=256)
LLAMA3_ROPE = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
               "original_max_position_embeddings": 64}
VARIANTS = {
    "default": {},
    "llama3_rope": {"rope_scaling": LLAMA3_ROPE},
    "tied_embeddings": {"tie_word_embeddings": True},
}


class Logits(torch.nn.Module):
    """input_ids -> logits, without a KV cache."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids):
        return self.model(input_ids=input_ids, use_cache=False).logits


def tiny_llama(variant, seed=0):
    torch.manual_seed(seed)
    config = transformers.LlamaConfig(**BASE, **VARIANTS[variant])
    model = transformers.LlamaForCausalLM(config).eval()
    if variant == "tied_embeddings":
        assert model.lm_head.weight is model.model.embed_tokens.weight
    return Logits(model)


def input_ids(batch, seq=12, seed=1):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, BASE["vocab_size"], (batch, seq), generator=g)


@pytest.mark.parametrize("decompose", [False, True], ids=["export", "decomposed"])
@pytest.mark.parametrize("batch", [1, 2])
@pytest.mark.parametrize("variant", list(VARIANTS))
def test_llama_logits_match_eager(variant, batch, decompose):
    model, ids = tiny_llama(variant), input_ids(batch)
    check(model, ids, decompose=decompose, atol=1e-4, rtol=1e-4)


def test_llama_exports_the_attention_and_mlp_ops():
    # Guards the test above against a transformers change that would route around the ops under
    # test (e.g. an eager attention path instead of SDPA).
    model, ids = tiny_llama("default"), input_ids(1)
    assert {"aten.scaled_dot_product_attention.default", "aten.silu.default"} <= exported_ops(model, ids)
    # Decomposed, SDPA becomes softmax + bmm on the CPU; a CUDA export keeps a fused variant
    # (flash / efficient attention, with constant_pad_nd aligning the head dim on torch 2.11).
    ops = exported_ops(model, ids, decompose=True)
    assert "aten.sigmoid.default" in ops
    assert {"aten._softmax.default", "aten.bmm.default"} <= ops or any("_scaled_dot_product" in o for o in ops), ops


def test_llama3_rope_changes_the_logits():
    # The llama3 variant really rescales the rotary frequencies (else it would test nothing new).
    ids = input_ids(1)
    with torch.no_grad():
        a = tiny_llama("default")(ids)
        b = tiny_llama("llama3_rope")(ids)
    assert not torch.allclose(a, b, atol=1e-4)
