"""The production sweep's plan: which (preset, batch, precision) cells and which torch.compile runs fit
the device budget, what was trimmed, and the run-time estimate. Pure Python: tested on the CPU.

Cost model (seconds, rough, from the lent H200 runs of 2026-12-02; printed with the plan so the lead can
judge it): weights export ~0.6 GB/s (generate + write), inputs ~3 s per batch, a luminal process ~4 s
(start, NVRTC from a partly warm cache, first run) + loading its weights at ~2 GB/s + its timed calls,
moving a PyTorch model to the GPU ~3 GB/s, torch.compile reduce-overhead ~40 s, max-autotune ~120 s.
"""
import dataclasses

PRESETS = ("kaggle", "mlperf")
BATCHES = (256, 2048, 16384)
PRECISIONS = ("fp32", "tf32", "bf16", "int8")  # the default sweep
ALL_PRECISIONS = PRECISIONS + ("fp8", "tf32x3")  # what --precisions accepts
COMPILE_MODES = ("reduce-overhead", "max-autotune")
# Stock PyTorch has no GPU int8 DLRM: the int8 cells show PyTorch bf16 (measured once, labelled so).
# fp8 (int8 tables, e4m3 GEMMs) likewise: its PyTorch rows are bf16 (bench/fp8_torch.py has the GEMMs).
# tf32x3 keeps fp32 accuracy: its PyTorch rows are fp32 (the same accuracy class).
TORCH_PRECISION = {"fp32": "fp32", "tf32": "tf32", "tf32x3": "fp32", "bf16": "bf16", "int8": "bf16", "fp8": "bf16"}

COST = {"export_gbps": 0.6, "inputs_s": 3.0, "luminal_start_s": 4.0, "luminal_load_gbps": 2.0,
        "to_gpu_gbps": 3.0, "reduce-overhead": 40.0, "max-autotune": 120.0}
# Guessed per-call times (us) for the estimate only: PyTorch eager launches ~40 kernels.
CALL_US = {"luminal": 60.0, "eager": 900.0, "graph": 300.0, "compiled": 300.0}


@dataclasses.dataclass
class Settings:
    """What the command line asked for."""
    presets: tuple = PRESETS
    batches: tuple = BATCHES
    precisions: tuple = PRECISIONS
    warmup: int = 20
    iters: int = 100
    max_rows: dict = dataclasses.field(default_factory=lambda: {"kaggle": None, "mlperf": 2_000_000})
    compile_batches: tuple = (2048,)
    budget_s: float = 450.0
    quick: bool = False


def quick(s: Settings) -> Settings:
    """--quick: fewer iterations, smaller MLPerf tables, batch 2048 and 16384, one compile mode."""
    return dataclasses.replace(s, batches=tuple(b for b in s.batches if b != 256) or s.batches, warmup=5,
                               iters=30, max_rows=dict(s.max_rows, mlperf=1 << 20), budget_s=240.0, quick=True)


def table_bytes(cfg_dict):
    """Bytes of the fp32 tables of a config dict (m_spa, ln_emb)."""
    return sum(cfg_dict["ln_emb"]) * cfg_dict["m_spa"] * 4


# torch.compile runs in priority order: the headline bf16 / fp32 reduce-overhead cells, one max-autotune
# point at the MLPerf bf16 cell, then the rest.
COMPILE_PRIORITY = [("mlperf", "bf16", "reduce-overhead"), ("kaggle", "bf16", "reduce-overhead"),
                    ("mlperf", "fp32", "reduce-overhead"), ("mlperf", "bf16", "max-autotune"),
                    ("kaggle", "fp32", "reduce-overhead"), ("kaggle", "bf16", "max-autotune"),
                    ("mlperf", "tf32", "reduce-overhead"), ("kaggle", "tf32", "reduce-overhead"),
                    ("mlperf", "fp32", "max-autotune"), ("kaggle", "fp32", "max-autotune"),
                    ("mlperf", "tf32", "max-autotune"), ("kaggle", "tf32", "max-autotune")]


def _compile_candidates(s: Settings):
    """(preset, batch, torch precision, mode) in COMPILE_PRIORITY order, for the asked presets,
    precisions and compile batches (--quick: no max-autotune)."""
    torch_precisions = {TORCH_PRECISION[p] for p in s.precisions}
    out = []
    for b in s.compile_batches:
        if b not in s.batches:
            continue
        out += [(p, b, prec, mode) for p, prec, mode in COMPILE_PRIORITY
                if p in s.presets and prec in torch_precisions and not (s.quick and mode == "max-autotune")]
    return out


def base_cost(s: Settings, cfgs):
    """Seconds for everything but torch.compile: exports, luminal processes, PyTorch eager + graph."""
    calls = s.warmup + 3 * s.iters
    t = {"export": 0.0, "luminal": 0.0, "pytorch": 0.0}
    for p in s.presets:
        gb = table_bytes(cfgs[p]) / 1e9
        t["export"] += gb / COST["export_gbps"] + COST["inputs_s"] * len(s.batches)
        per_run = COST["luminal_start_s"] + gb / COST["luminal_load_gbps"] + calls * CALL_US["luminal"] * 1e-6
        t["luminal"] += per_run * len(s.batches) * len(s.precisions)
        torch_precs = {TORCH_PRECISION[q] for q in s.precisions}
        t["pytorch"] += gb / COST["to_gpu_gbps"] * (1 + ("bf16" in torch_precs))
        t["pytorch"] += len(torch_precs) * len(s.batches) * calls * (CALL_US["eager"] + CALL_US["graph"]) * 1e-6
    return t


def make_plan(s: Settings, cfgs):
    """Cells, the torch.compile runs that fit s.budget_s, what was trimmed and the estimate."""
    cells = [(p, b, q) for p in s.presets for b in s.batches for q in s.precisions]
    base = base_cost(s, cfgs)
    left = s.budget_s - sum(base.values())
    compiles, trimmed = [], []
    for c in _compile_candidates(s):
        cost = COST[c[3]] + (s.warmup + 3 * s.iters) * CALL_US["compiled"] * 1e-6
        if cost <= left:
            compiles.append(c)
            left -= cost
        else:
            trimmed.append(f"torch.compile {c[3]} at {c[0]} batch {c[1]} {c[2]} (~{cost:.0f} s, over budget)")
    for b in s.batches:
        if b not in s.compile_batches:
            only = ", ".join(map(str, s.compile_batches)) or "none"
            trimmed.append(f"torch.compile at batch {b}: not run (compile batches: {only})")
    for p in s.presets:
        if s.max_rows.get(p):
            trimmed.append(f"{p}: tables capped at {s.max_rows[p]} rows (--max-rows); not the full model")
    if "int8" in s.precisions:
        trimmed.append("int8 cells: PyTorch rows are the bf16 measurements (no stock PyTorch GPU int8 DLRM)")
    if "fp8" in s.precisions:
        trimmed.append("fp8 cells: PyTorch rows are the bf16 measurements (no PyTorch fp8 DLRM here; "
                       "bench/fp8_torch.py compares the GEMMs)")
    est = dict(base, compile=sum(COST[c[3]] for c in compiles))
    return {"cells": cells, "compiles": compiles, "trimmed": trimmed, "estimate_s": est,
            "total_s": sum(est.values()), "settings": dataclasses.asdict(s)}


def describe(plan):
    """The plan as printed at the start of the run."""
    est = plan["estimate_s"]
    lines = [f"[plan] {len(plan['cells'])} cells, {len(plan['compiles'])} torch.compile runs; estimated "
             f"{plan['total_s']:.0f} s (" + ", ".join(f"{k} {v:.0f} s" for k, v in est.items()) + ")",
             f"[plan] iterations: {plan['settings']['warmup']} warm-up + {plan['settings']['iters']} timed "
             "per timing method"]
    lines += [f"[plan] compile: {c[3]} {c[0]} batch {c[1]} {c[2]}" for c in plan["compiles"]]
    lines += [f"[plan] trimmed: {t}" for t in plan["trimmed"]]
    return "\n".join(lines)
