"""The floor math and the accuracy metrics, checked against hand-computed values."""
import math

import numpy as np
import pytest

import accuracy
import roofline

TINY = {"m_spa": 2, "ln_emb": [5, 7], "ln_bot": [3, 2], "ln_top": [5, 1], "bag": 1, "index_dtype": "int32"}


def test_flops_by_hand():
    # B=4: MLP MACs 3*2 + 5*1 = 11 -> 2*4*11 = 88; 3 pairs of length-2 dots -> 2*4*3*2 = 48;
    # bag adds: 8 lookups * d=2 = 16.
    assert roofline.flops(TINY, 4) == 88 + 48 + 16


def test_bytes_and_floor_by_hand():
    b = roofline.bytes_moved(TINY, 4, "fp32")
    # params (6+2) + (5+1) = 14 fp32; rows 8 * 2 * 4; io: idx 8*4 + offsets 4*2*4 + dense 4*3*4 + out 4*4
    assert b == {"weights": 56, "rows": 64, "io": 32 + 32 + 48 + 16, "total": 56 + 64 + 128}
    f = roofline.floor(TINY, 4, "fp32")
    assert f["memory_us"] == pytest.approx(248 / 4.27e12 * 1e6)
    assert f["compute_us"] == pytest.approx(152 / 67e12 * 1e6)
    assert f["bound"] == "memory" and f["floor_us"] == f["memory_us"]


def test_int8_rows_and_rate():
    b = roofline.bytes_moved(TINY, 4, "int8", rows_gathered=3)
    assert b["rows"] == 3 * (2 + 8)          # uint8 codes + fp32 scale and bias per row
    assert b["weights"] == 14 * 2            # MLPs in bf16
    assert roofline.floor(TINY, 4, "int8")["rate"] == roofline.RATES["bf16"]


def test_fp8_rows_weights_and_rate():
    b = roofline.bytes_moved(TINY, 4, "fp8", rows_gathered=3)
    assert b["rows"] == 3 * (2 + 8)          # int8 tables, as --precision int8
    assert b["weights"] == 14 * 1            # e4m3 weight copies
    f = roofline.floor(TINY, 4, "fp8")
    assert f["rate_precision"] == "fp8" and f["rate"] == roofline.RATES["fp8"] > roofline.RATES["bf16"]


def test_mlperf_flops_match_the_known_figure():
    mlperf = {"m_spa": 128, "ln_emb": [10] * 26, "ln_bot": [13, 512, 256, 128],
              "ln_top": [479, 1024, 1024, 512, 256, 1]}
    mlp = 2 * 2048 * (roofline.mlp_macs(mlperf["ln_bot"]) + roofline.mlp_macs(mlperf["ln_top"]))
    assert mlp / 1e9 == pytest.approx(9.69, abs=0.01)  # "~9.7 GFLOP per batch of 2048" (shared/GPU.md)
    f = roofline.floor(mlperf, 2048, "fp32")
    assert f["bound"] == "compute" and f["compute_us"] == pytest.approx(146, abs=3)


def test_rankdata_ties_average():
    assert accuracy.rankdata([10, 20, 20, 30]).tolist() == [1, 2.5, 2.5, 4]
    assert accuracy.rankdata([3, 1, 2]).tolist() == [3, 1, 2]


def test_spearman_hand_example():
    # ranks b = [1, 2, 3.5, 5, 3.5]; centred dot 8, norms 10 and 9.5 -> 8 / sqrt(95)
    assert accuracy.spearman([1, 2, 3, 4, 5], [5, 6, 7, 8, 7]) == pytest.approx(8 / math.sqrt(95))
    assert accuracy.spearman([1, 2, 3], [30, 20, 10]) == pytest.approx(-1.0)
    assert accuracy.spearman([1, 2, 3], [1, 4, 9]) == pytest.approx(1.0)  # monotone, not linear
    assert math.isnan(accuracy.spearman([1, 1, 1], [1, 2, 3]))
    assert math.isnan(accuracy.spearman([1, float("nan")], [1, 2]))


def test_compare():
    r = accuracy.compare(np.array([[0.5], [0.25], [0.75]]), np.array([0.5, 0.3, 0.7]))
    assert r["max_abs_diff"] == pytest.approx(0.05)
    assert r["spearman"] == pytest.approx(1.0)
    with pytest.raises(ValueError, match=r"\[bench\]"):
        accuracy.compare([1, 2], [1, 2, 3])
