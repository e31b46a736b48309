"""Renders the production sweep's result (JSON as bench_production.py writes it) as markdown tables, a
JSON file and a plot (optional: matplotlib). Pure Python apart from the plot: tested on a canned JSON."""
import json
import math
import os

import roofline


def _f(v, fmt="{:.1f}"):
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    return fmt.format(v)


def _samples_per_s(row, batch):
    pipe = row.get("pipelined", {}).get("mean_us")
    return batch / pipe * 1e6 if pipe else None


def ok_rows(cell):
    """Rows of a cell that ran."""
    return [r for r in cell["rows"] if "error" not in r]


def winner(cell):
    """The row with the lowest latency incl. sync (None if nothing ran)."""
    rows = ok_rows(cell)
    return min(rows, key=lambda r: r["latency"]["mean_us"]) if rows else None


def _label(r):
    """Backend name plus its label (a stand-in) and note (e.g. the binary's accuracy check failed)."""
    return (r["backend"] + (f" [{r['label']}]" if r.get("label") else "")
            + (f" [{r['note']}]" if r.get("note") else ""))


def cell_lines(cell):
    """Markdown rows of one (preset, batch, precision) cell, fastest first, failures last."""
    fl = cell["floor"]["floor_us"]
    out = []
    for r in sorted(ok_rows(cell), key=lambda r: r["latency"]["mean_us"]):
        lat = r["latency"]["mean_us"]
        out.append(f"| {cell['preset']} | {cell['batch']} | {cell['precision']} | {_label(r)} | "
                   f"{_f(lat)} | {_f(r['events']['mean_us'])} | {_f(r['pipelined']['mean_us'])} | "
                   f"{_f(_samples_per_s(r, cell['batch']), '{:.3g}')} | {_f(fl)} | {_f(lat / fl, '{:.1f}')} | "
                   f"{_f(r.get('max_abs_diff'), '{:.1e}')} | {_f(r.get('spearman'), '{:.5f}')} |")
    for r in cell["rows"]:
        if "error" in r:
            msg = r["error"].replace("|", "/").replace("\n", " ")[:160]
            out.append(f"| {cell['preset']} | {cell['batch']} | {cell['precision']} | {_label(r)} | "
                       f"failed: {msg} | | | | {_f(fl)} | | | |")
    return out


def render(result):
    """The whole markdown report: setup, per-cell rows, winners, large-batch throughput, floors, notes."""
    cells = result["cells"]
    lines = ["| preset | batch | precision | backend | latency mean (us) | events mean (us) | pipelined (us) "
             "| samples/s (pipelined) | floor (us) | x floor | max abs vs fp32 | Spearman |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for c in cells:
        lines += cell_lines(c)
    precs = list(dict.fromkeys(c["precision"] for c in cells))
    lines += ["", "**Winner per cell** (lowest latency incl. sync; us)", "",
              "| preset | batch | " + " | ".join(precs) + " |", "|---|---|" + "---|" * len(precs)]
    for (p, b) in dict.fromkeys((c["preset"], c["batch"]) for c in cells):
        row = []
        for q in precs:
            c = next((c for c in cells if (c["preset"], c["batch"], c["precision"]) == (p, b, q)), None)
            w = winner(c) if c else None
            row.append(f"{_label(w)} ({w['latency']['mean_us']:.1f})" if w else "-")
        lines.append(f"| {p} | {b} | " + " | ".join(row) + " |")
    big = max(c["batch"] for c in cells)
    lines += ["", f"**Throughput at batch {big}** (samples/s = batch / pipelined time per call; one "
              "query-item pair = one sample)", "", "| preset | precision | backend | samples/s |", "|---|---|---|---|"]
    for c in cells:
        if c["batch"] == big:
            for r in sorted(ok_rows(c), key=lambda r: -(_samples_per_s(r, big) or 0)):
                lines.append(f"| {c['preset']} | {c['precision']} | {_label(r)} | "
                             f"{_f(_samples_per_s(r, big), '{:.3g}')} |")
    lines += ["", "**Roofline floors** (max of compute and memory; us)", "",
              "| preset | batch | precision | GFLOP | MB moved | compute (us) | memory (us) | floor (us) | bound |",
              "|---|---|---|---|---|---|---|---|---|"]
    for c in cells:
        f = c["floor"]
        lines.append(f"| {c['preset']} | {c['batch']} | {c['precision']} | {f['flops'] / 1e9:.2f} | "
                     f"{f['bytes']['total'] / 1e6:.1f} | {f['compute_us']:.1f} | {f['memory_us']:.1f} | "
                     f"{f['floor_us']:.1f} | {f['bound']} |")
    lines += ["", "Rates used:", roofline.describe_rates(), "", "Trimmed to fit the device budget:"]
    lines += [f"- {t}" for t in result.get("plan", {}).get("trimmed", [])] or ["- nothing"]
    return "\n".join(lines)


def plot(result, path):
    """Latency per cell, log scale, one panel per preset; returns False when matplotlib is missing."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    presets = list(dict.fromkeys(c["preset"] for c in result["cells"]))
    fig, axes = plt.subplots(len(presets), 1, figsize=(13, 4.2 * len(presets)), squeeze=False)
    for ax, p in zip(axes[:, 0], presets):
        cells = [c for c in result["cells"] if c["preset"] == p]
        backends = list(dict.fromkeys(r["backend"] for c in cells for r in ok_rows(c)))
        w = 0.8 / max(1, len(backends))
        for i, bk in enumerate(backends):
            pts = []
            for j, c in enumerate(cells):
                r = next((r for r in ok_rows(c) if r["backend"] == bk), None)
                if r:
                    pts.append((j + (i - len(backends) / 2 + 0.5) * w, r["latency"]["mean_us"], bool(r.get("label"))))
            bars = ax.bar([x for x, _, _ in pts], [y for _, y, _ in pts], width=w, label=bk)
            for bar, (_, _, stand_in) in zip(bars, pts):
                if stand_in:  # e.g. PyTorch bf16 shown in an int8 cell
                    bar.set_hatch("//")
        ax.scatter(range(len(cells)), [c["floor"]["floor_us"] for c in cells], marker="_", s=400,
                   color="black", label="roofline floor", zorder=3)
        ax.set_xticks(range(len(cells)))
        ax.set_xticklabels([f"b{c['batch']}\n{c['precision']}" for c in cells], fontsize=8)
        ax.set_yscale("log")
        ax.set_ylabel("latency incl. sync (us, log)")
        ax.set_title(f"DLRM {p} (hatched: a stand-in, e.g. PyTorch bf16 in int8 cells)")
        ax.legend(fontsize=7, ncol=3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return True


def write_all(result, out_dir, name="production"):
    """Writes NAME.md, NAME.json and (if matplotlib is there) NAME.png under out_dir; returns the table."""
    os.makedirs(out_dir, exist_ok=True)
    table = render(result)
    with open(os.path.join(out_dir, f"{name}.md"), "w") as f:
        f.write(table + "\n")
    with open(os.path.join(out_dir, f"{name}.json"), "w") as f:
        json.dump(result, f, indent=1, default=str)
    try:
        if not plot(result, os.path.join(out_dir, f"{name}.png")):
            print("[report] matplotlib not installed: no plot")
    except Exception as e:  # noqa: BLE001 - the table is the record; the plot is optional
        print(f"[report] plot failed: {e}")
    return table
