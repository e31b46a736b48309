"""torchrec's own DLRM_DCN (MLPerf DLRM-v2 widths, tables capped) with KeyedJaggedTensor inputs on the CPU:
torchrec eager beside luminal.compile of the same module (the KJT path: values split per key by closed
bag offsets, the bag_concat rule), fp32, host clock, one process. Needs torchrec (tools/setup-torchrec):

    OMP_NUM_THREADS=2 build/torchrec-venv/bin/python bench/bench_torchrec_cpu.py --batches 270,2048 --max-rows 20000

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
from torchrec.models.dlrm import DLRM_DCN  # noqa: E402
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


def inputs(cfg, batch):
    """(dense, KJT) from export_v2.make_inputs (MLPerf multi-hot sizes, uniform rows), key-major."""
    dense, values, lengths = export_v2.make_inputs(dataclasses.replace(cfg, batch=batch))
    kjt = KeyedJaggedTensor.from_lengths_sync(keys=cfg.keys(), values=torch.cat(values).long(),
                                              lengths=torch.cat(lengths).int())
    return dense, kjt


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--preset", default="dlrm-v2")
    p.add_argument("--max-rows", type=int, default=20000)
    p.add_argument("--batches", default="270,2048")
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--iters", type=int, default=20)
    p.add_argument("--json")
    a = p.parse_args(argv)
    cfg = export_v2.from_preset(a.preset, a.max_rows)
    import luminal

    model = build(cfg)
    batches = [int(b) for b in a.batches.split(",")]
    b_dim = torch.export.Dim("batch", min=1, max=max(batches) * 2)
    nnz = torch.export.Dim("nnz", min=1, max=1 << 26)
    dense, kjt = inputs(cfg, 16)  # the export example (batch 1 would specialize the dim)
    ds = ({0: b_dim}, [{0: nnz}, None, {0: len(cfg.rows) * b_dim}, None, None, None])
    threads = torch.get_num_threads()
    rows, rules = [], {}
    with torch.no_grad():
        # fp32 only: torchrec's DLRM_DCN moved to bf16 fails in eager on the CPU (its EmbeddingBagCollection returns
        # f32 pooled embeddings beside the bf16 cross-layer weights: "expected m1 and m2 to have the same dtype").
        for precision in ("fp32",):
            eager = model
            compiled = luminal.compile(model, (dense, kjt), dynamic_shapes=ds, device="cpu")
            rules[precision] = compiled.stats()["rules"]
            for b in batches:
                d, k = inputs(cfg, b)
                want = model(d, k)
                diffs = {"torchrec eager": 0.0, "luminal.compile": (compiled(d, k) - want).abs().max().item()}
                for engine, fn in (("torchrec eager", lambda: eager(d, k)), ("luminal.compile", lambda: compiled(d, k))):
                    t = cpu_rows.time_call(fn, a.warmup, a.iters)
                    rows.append(dict(engine=engine, precision=precision, batch=b, threads=threads,
                                     max_abs_diff=diffs[engine], pairs_s=b / t["median_us"] * 1e6, **t))
    print(f"\ntorchrec DLRM_DCN ({a.preset} widths, tables <= {a.max_rows} rows), {threads} threads, "
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
