"""DLRM-v2 (torchrec DLRM_DCN's math and names, examples/dlrm/export_v2.py) through luminal.compile against eager
PyTorch: multi-hot bags given as per-key values and lengths (offsets = cumsum(lengths) - lengths in the model),
DCNv2 cross layers, the logit out; fp32 exact, bf16 close to eager bf16. LUMINAL_TEST_DEVICE=cuda runs it on CUDA."""
import copy
import os
import sys

import pytest
import torch

import luminal
from aten_check import DEVICE, on_device

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples", "dlrm"))
import export_v2  # noqa: E402


def small(batch, seed=0):
    cfg = export_v2.V2Config(**export_v2.PRESETS["dlrm-v2-small"], batch=batch, seed=seed, bag_dist="random")
    return cfg, export_v2.build_model(cfg).eval()


def test_compile_equals_eager_fp32_with_empty_bags():
    cfg, m = small(64)
    inputs = export_v2.make_inputs(cfg)
    assert any((n == 0).any() for n in inputs[2]), "random bags should include empty ones"
    m = m.to(DEVICE)
    x = on_device(inputs)
    fast = luminal.compile(m, tuple(x))
    with torch.no_grad():
        want = m(*x)
    got = fast(*x)
    assert got.shape == (64, 1) and got.std() > 0
    torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)
    # x0 = [x, bags] found, and both cross layers (x0 * (u W^T + b) + x_l); host kernels where the backend
    # has them (the CUDA cross-layer kernel multiplies 16-bit floats only).
    # The cross net and the top MLP are one chain of dense layers too (mlp_chain: a CUDA kernel for
    # 16-bit floats, so the graph at f32 everywhere).
    rules = fast.stats()["rules"]
    chains = [r for r in rules if r.startswith("mlp_chain:")]
    assert len(chains) == 1 and "80-cross(r8)-cross(r8)-" in chains[0] and " f32 -> decomposed" in chains[0], rules
    line, *cross = [r for r in rules if not r.startswith("mlp_chain:")]
    choice = "fused" if DEVICE == "cpu" else "decomposed"
    assert line.startswith(f"bag_concat: x0 = [x, 4 bags] x 16, f32 -> {choice}"), line
    assert len(cross) == cfg.cross_layers, cross
    for c in cross:
        assert c.startswith(f"cross_layer: x0 * (u W^T + b) + x_l, n 80 k 8 f32 -> {choice}"), c
    if DEVICE == "cpu":  # the oracle keeps the graph and says why
        ref = luminal.compile(m, tuple(x), device="reference")
        ref_rules = [r for r in ref.stats()["rules"] if not r.startswith("mlp_chain:")]
        assert ref_rules == ["bag_concat: x0 = [x, 4 bags] x 16, f32 -> decomposed; fused: no "
                             "bag_concat kernel on this backend; split: no bag_concat kernel on this "
                             "backend"] + [
            "cross_layer: x0 * (u W^T + b) + x_l, n 80 k 8 f32 -> decomposed; fused: no cross_gemm kernel on "
            "this backend"] * cfg.cross_layers, ref.stats()["rules"]
        torch.testing.assert_close(ref(*x), want, atol=1e-5, rtol=1e-5)


def test_compile_bf16_close_to_eager_bf16():
    cfg, m = small(32, seed=1)
    x = on_device(export_v2.make_inputs(cfg))
    m = m.to(DEVICE)
    fast = luminal.compile(m, tuple(x), precision="bf16")
    with torch.no_grad():
        want = copy.deepcopy(m).to(torch.bfloat16)(x[0].to(torch.bfloat16), x[1], x[2]).float()
    torch.testing.assert_close(fast(*x), want, atol=3e-2, rtol=3e-2)
