"""The production sweep's config expansion, trimming plan and estimate (no GPU)."""
import dataclasses

import production_plan as pp

KAGGLE = {"m_spa": 16, "ln_emb": [1000] * 26}
MLPERF = {"m_spa": 128, "ln_emb": [2_000_000] * 10 + [1000] * 16}
CFGS = {"kaggle": KAGGLE, "mlperf": MLPERF}


def test_cells_are_the_full_cross_product():
    plan = pp.make_plan(pp.Settings(), CFGS)
    assert len(plan["cells"]) == 2 * 3 * 4
    assert ("mlperf", 16384, "int8") in plan["cells"] and ("kaggle", 256, "fp32") in plan["cells"]


def test_compiles_only_at_batch_2048_and_within_budget():
    s = pp.Settings()
    plan = pp.make_plan(s, CFGS)
    assert plan["compiles"], "the default budget fits some torch.compile runs"
    assert {c[1] for c in plan["compiles"]} == {2048}
    assert {c[2] for c in plan["compiles"]} <= {"fp32", "tf32", "bf16"}  # int8 never compiles its own
    assert plan["total_s"] <= s.budget_s
    assert plan["compiles"][0] == ("mlperf", 2048, "bf16", "reduce-overhead")  # highest priority first
    assert ("mlperf", 2048, "bf16", "max-autotune") in plan["compiles"]  # one max-autotune point fits
    assert any("batch 256" in t for t in plan["trimmed"]) and any("batch 16384" in t for t in plan["trimmed"])
    assert any("mlperf: tables capped at 2000000" in t for t in plan["trimmed"])
    assert any("int8 cells" in t for t in plan["trimmed"])


def test_every_candidate_is_either_planned_or_trimmed():
    s = pp.Settings()
    plan = pp.make_plan(s, CFGS)
    cands = pp._compile_candidates(s)
    over = [t for t in plan["trimmed"] if "over budget" in t]
    assert len(plan["compiles"]) + len(over) == len(cands) == 2 * 6


def test_tiny_budget_trims_every_compile():
    plan = pp.make_plan(dataclasses.replace(pp.Settings(), budget_s=10), CFGS)
    assert plan["compiles"] == []
    assert sum("over budget" in t for t in plan["trimmed"]) == 12


def test_quick_has_no_max_autotune_and_fewer_calls():
    s = pp.quick(pp.Settings())
    assert s.iters < pp.Settings().iters and 256 not in s.batches
    plan = pp.make_plan(s, CFGS)
    assert all(c[3] == "reduce-overhead" for c in plan["compiles"])
    assert s.max_rows["mlperf"] == 1 << 20


def test_estimate_grows_with_table_bytes_and_is_described():
    small = pp.make_plan(pp.Settings(), CFGS)
    big = pp.make_plan(pp.Settings(), dict(CFGS, mlperf={"m_spa": 128, "ln_emb": [40_000_000] * 26}))
    assert big["estimate_s"]["export"] > small["estimate_s"]["export"]
    text = pp.describe(small)
    assert "estimated" in text and "[plan] compile: reduce-overhead mlperf batch 2048 bf16" in text
