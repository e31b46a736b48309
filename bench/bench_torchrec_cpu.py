"""torchrec's own DLRM_DCN (MLPerf DLRM-v2 widths, tables capped) or DLRM (dot interaction, Criteo Kaggle widths)
with KeyedJaggedTensor inputs on the CPU: torchrec eager beside luminal.compile of the same module (the KJT path:
values split per key by closed bag offsets; the bag_concat rule for DLRM_DCN, the dlrm rule's fused sparse kernel
for DLRM, and with --decomposed that model without its rule), fp32, host clock, one process. Needs torchrec
(tools/setup-torchrec):

    OMP_NUM_THREADS=2 build/torchrec-venv/bin/python bench/bench_torchrec_cpu.py --batches 270,2048 --max-rows 20000
    OMP_NUM_THREADS=2 build/torchrec-venv/bin/python bench/bench_torchrec_cpu.py --model dlrm --decomposed

Prints a markdown table (median us, M pairs/s, max abs diff vs eager) and writes --json.
"""
import argparse
import dataclasses
import json
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "examples", "dlrm"))
import cpu_rows  # noqa: E402
import export_v2  # noqa: E402
from torchrec.models.dlrm import DLRM, DLRM_DCN  # noqa: E402
from torchrec.modules.embedding_configs import EmbeddingBagConfig  # noqa: E402
from torchrec.modules.embedding_modules import EmbeddingBagCollection  # noqa: E402
from torchrec.sparse.jagged_tensor import KeyedJaggedTensor  # noqa: E402


def build(cfg):
    """torchrec's DLRM_DCN at cfg's widths (torchrec's own init; seeded)."""
    torch.manual_seed(cfg.seed)
    tables = [EmbeddingBagConfig(name=f"t_{k}", embedding_dim=cfg.dim, num_embeddings=r, feature_names=[k])
              for k, r in zip(cfg.keys(), cfg.rows)]
    ebc = EmbeddingBagCollection(tables=tables, device=torch.device("cpu"))
    return DLRM_DCN(embedding_bag_collection=ebc, dense_in_features=cfg.ln_bot[0],
                    dense_arch_layer_sizes=cfg.ln_bot[1:], over_arch_layer_sizes=cfg.ln_top + [1],
                    dcn_num_layers=cfg.cross_layers, dcn_low_rank_dim=cfg.cross_rank).eval()


# torchrec DLRM at the Criteo Kaggle widths (the DLRM-v1 model luminal's dlrm rule fuses): 26 tables x 16, one id
# per bag (Kaggle's one-hot features), bottom 13-512-256-64-16, top 367-512-256-1.
KAGGLE_ROWS = 100_000


def build_dot(max_rows, seed=1):
    """torchrec's DLRM (dot interaction) at the Kaggle widths, tables of min(max_rows, 100k) rows."""
    torch.manual_seed(seed)
    keys = [f"cat_{k}" for k in range(26)]
    tables = [EmbeddingBagConfig(name=f"t_{k}", embedding_dim=16, num_embeddings=min(max_rows, KAGGLE_ROWS),
                                 feature_names=[k]) for k in keys]
    ebc = EmbeddingBagCollection(tables=tables, device=torch.device("cpu"))
    return DLRM(embedding_bag_collection=ebc, dense_in_features=13, dense_arch_layer_sizes=[512, 256, 64, 16],
                over_arch_layer_sizes=[512, 256, 1]).eval(), keys


def dot_inputs(keys, rows, batch, seed=2):
    """(dense, KJT): one uniform id per bag."""
    g = torch.Generator().manual_seed(seed + batch)
    values = torch.randint(0, rows, (len(keys) * batch,), generator=g)
    kjt = KeyedJaggedTensor.from_lengths_sync(keys=keys, values=values,
                                              lengths=torch.ones(len(keys) * batch, dtype=torch.int32))
    return torch.randn(batch, 13, generator=g), kjt


def inputs(cfg, batch):
    """(dense, KJT) from export_v2.make_inputs (MLPerf multi-hot sizes, uniform rows), key-major."""
    dense, values, lengths = export_v2.make_inputs(dataclasses.replace(cfg, batch=batch))
    kjt = KeyedJaggedTensor.from_lengths_sync(keys=cfg.keys(), values=torch.cat(values).long(),
                                              lengths=torch.cat(lengths).int())
    return dense, kjt


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", choices=["dlrm_dcn", "dlrm"], default="dlrm_dcn")
    p.add_argument("--decomposed", action="store_true", help="also luminal.compile with alternative='none' (no rules)")
    p.add_argument("--preset", default="dlrm-v2")
    p.add_argument("--max-rows", type=int, default=20000)
    p.add_argument("--batches", default="270,2048")
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--iters", type=int, default=20)
    p.add_argument("--json")
    a = p.parse_args(argv)
    cfg = export_v2.from_preset(a.preset, a.max_rows)
    import luminal

    if a.model == "dlrm":
        model, keys = build_dot(a.max_rows)
        rows_k = min(a.max_rows, KAGGLE_ROWS)
        make = lambda b: dot_inputs(keys, rows_k, b)  # noqa: E731
        name, n_keys = f"DLRM (Kaggle widths, tables {rows_k} rows)", len(keys)
    else:
        model = build(cfg)
        make = lambda b: inputs(cfg, b)  # noqa: E731
        name, n_keys = f"DLRM_DCN ({a.preset} widths, tables <= {a.max_rows} rows)", len(cfg.rows)
    batches = [int(b) for b in a.batches.split(",")]
    b_dim = torch.export.Dim("batch", min=1, max=max(batches) * 2)
    nnz = torch.export.Dim("nnz", min=1, max=1 << 26)
    dense, kjt = make(16)  # the export example (batch 1 would specialize the dim)
    ds = ({0: b_dim}, [{0: nnz}, None, {0: n_keys * b_dim}, None, None, None])
    threads = torch.get_num_threads()
    rows, rules = [], {}
    with torch.no_grad():
        # fp32 only: torchrec's DLRM_DCN moved to bf16 fails in eager on the CPU (its EmbeddingBagCollection returns
        # f32 pooled embeddings beside the bf16 cross-layer weights: "expected m1 and m2 to have the same dtype").
        for precision in ("fp32",):
            eager = model
            engines = {"luminal.compile": luminal.compile(model, (dense, kjt), dynamic_shapes=ds, device="cpu")}
            rules[precision] = engines["luminal.compile"].stats()["rules"]
            if a.decomposed:
                engines["luminal.compile, no rules"] = luminal.compile(model, (dense, kjt), dynamic_shapes=ds,
                                                                        device="cpu", alternative="none")
            for b in batches:
                d, k = make(b)
                want = model(d, k)
                diffs = {"torchrec eager": 0.0, **{e: (c(d, k) - want).abs().max().item() for e, c in engines.items()}}
                calls = [("torchrec eager", lambda: eager(d, k))]
                calls += [(e, (lambda c: lambda: c(d, k))(c)) for e, c in engines.items()]
                for engine, fn in calls:
                    t = cpu_rows.time_call(fn, a.warmup, a.iters)
                    rows.append(dict(engine=engine, precision=precision, batch=b, threads=threads,
                                     max_abs_diff=diffs[engine], pairs_s=b / t["median_us"] * 1e6, **t))
    print(f"\ntorchrec {name}, {threads} threads, "
          f"torch {torch.__version__}; luminal rules: {rules}\n")
    print("| precision | batch | engine | median us | M pairs/s | max abs diff vs fp32 eager |\n|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['precision']} | {r['batch']} | {r['engine']} | {r['median_us']:.0f} | {r['pairs_s'] / 1e6:.3f} | "
              f"{r['max_abs_diff']:.1e} |")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"args": vars(a), "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
