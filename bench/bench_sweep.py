#!/usr/bin/env python3
"""DLRM sweep: batch x tables for eager, CUDA-graph replay, torch.compile reduce-overhead and both
luminal paths. Prints one table per backend, a winner-per-cell table, writes JSON and a plot.

    python bench/bench_sweep.py --dlrm build/examples/dlrm/dlrm --out /tmp/sweep
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples", "dlrm"))
import export as dlrm_export  # noqa: E402

from bench_common import time_three  # noqa: E402


def config_for(tables, batch):
    """Seed-shaped DLRM (bottom 13-8-4, d=4) with `tables` tables of growing vocab."""
    ln_emb = [10 * (k + 1) for k in range(tables)]
    n = tables + 1
    return dlrm_export.DlrmConfig(4, ln_emb, [13, 8, 4], [4 + n * (n - 1) // 2, 8, 1], batch, 1, 0)


def cuda_graph(model, args):
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            model(*args)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        model(*args)
    return g.replay


def luminal(binary, data_dir, mega, iters):
    js = os.path.join(data_dir, "mega.json" if mega else "graph.json")
    cmd = [binary, "run", "--weights", f"{data_dir}/weights.safetensors", "--inputs", f"{data_dir}/inputs.safetensors",
           "--device", "cuda", "--bench", "--iters", str(iters), "--warmup", "20", "--json", js] + (["--mega"] if mega else [])
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        return None, (p.stderr or p.stdout).strip()[-200:]
    with open(js) as f:
        return json.load(f)["bench"]["latency"]["mean_us"], None


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dlrm", default="build/examples/dlrm/dlrm")
    p.add_argument("--batches", type=int, nargs="*", default=[256, 1024, 2048, 4096])
    p.add_argument("--tables", type=int, nargs="*", default=[3, 8, 16])
    p.add_argument("--iters", type=int, default=200)
    p.add_argument("--out", default="bench/results")
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)
    backends = ["eager", "CUDA-graph replay", "torch.compile reduce-overhead", "luminal graph", "luminal mega"]
    res = {b: {} for b in backends}
    for t in a.tables:
        for b in a.batches:
            cfg = config_for(t, b)
            d = tempfile.mkdtemp(prefix="sweep_")
            dlrm_export.export(cfg, d)
            model = dlrm_export.build_model(cfg).cuda()
            args = dlrm_export.make_inputs(cfg, "cuda")
            key = f"{t}x{b}"
            with torch.no_grad():
                res["eager"][key] = time_three(lambda: model(*args), 20, a.iters)["latency"]["mean_us"]
                res["CUDA-graph replay"][key] = time_three(cuda_graph(model, args), 20, a.iters)["latency"]["mean_us"]
                torch._dynamo.reset()
                c = torch.compile(model, mode="reduce-overhead")
                for _ in range(3):
                    c(*args)
                res["torch.compile reduce-overhead"][key] = time_three(lambda: c(*args), 20, a.iters)["latency"]["mean_us"]
            for name, mega in [("luminal graph", False), ("luminal mega", True)]:
                v, err = luminal(a.dlrm, d, mega, a.iters)
                res[name][key] = v if v is not None else f"failed: {err}"
            print(f"[sweep] tables {t} batch {b}: " + ", ".join(f"{k}={res[k][key]}" for k in backends), flush=True)
    lines = []
    for bk in backends:
        lines += [f"\n**{bk}** (latency incl. sync, us)\n", "| tables \\ batch | " + " | ".join(map(str, a.batches)) + " |",
                  "|---" * (len(a.batches) + 1) + "|"]
        for t in a.tables:
            cells = [res[bk][f"{t}x{b}"] for b in a.batches]
            lines.append(f"| {t} | " + " | ".join(f"{c:.1f}" if isinstance(c, float) else str(c) for c in cells) + " |")
    lines += ["\n**winner per cell**\n", "| tables \\ batch | " + " | ".join(map(str, a.batches)) + " |",
              "|---" * (len(a.batches) + 1) + "|"]
    for t in a.tables:
        cells = []
        for b in a.batches:
            vals = {bk: res[bk][f"{t}x{b}"] for bk in backends if isinstance(res[bk][f"{t}x{b}"], float)}
            w = min(vals, key=vals.get)
            cells.append(f"{w} ({vals[w]:.1f})")
        lines.append(f"| {t} | " + " | ".join(cells) + " |")
    table = "\n".join(lines)
    print(table)
    with open(os.path.join(a.out, "sweep.md"), "w") as f:
        f.write(table + "\n")
    with open(os.path.join(a.out, "sweep.json"), "w") as f:
        json.dump({"batches": a.batches, "tables": a.tables, "latency_us": res}, f, indent=1)
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, axes = plt.subplots(1, len(a.tables), figsize=(4.5 * len(a.tables), 4), sharey=True)
        for ax, t in zip(axes if len(a.tables) > 1 else [axes], a.tables):
            for bk in backends:
                ys = [res[bk][f"{t}x{b}"] for b in a.batches]
                if all(isinstance(y, float) for y in ys):
                    ax.plot(a.batches, ys, marker="o", label=bk)
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ax.set_title(f"{t} tables")
            ax.set_xlabel("batch")
        axes[0].set_ylabel("latency incl. sync (us)") if len(a.tables) > 1 else axes.set_ylabel("us")
        (axes[0] if len(a.tables) > 1 else axes).legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(os.path.join(a.out, "sweep.png"), dpi=110)
    except Exception as e:  # noqa: BLE001 - the table is the record; the plot is optional
        print(f"[sweep] plot failed: {e}")


if __name__ == "__main__":
    main()
