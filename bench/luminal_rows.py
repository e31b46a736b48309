"""luminal rows: run the C++ `dlrm run --bench --json` binary and turn its JSON (or its failure) into a
row. Flags the binary does not have yet (--precision, --sparse land on branch `production`) are detected
from `dlrm run --help`, and a cell that needs a missing flag is an error cell, not a silent fp32 run."""
import json
import os
import subprocess
import time

_caps_cache = {}


def capabilities(binary):
    """The set of `dlrm run` options this binary offers (parsed from --help; empty if it cannot run)."""
    if binary not in _caps_cache:
        try:
            p = subprocess.run([binary, "run", "--help"], capture_output=True, text=True, timeout=30)
            text = p.stdout + p.stderr
        except (OSError, subprocess.TimeoutExpired):
            text = ""
        _caps_cache[binary] = {w.strip(",") for w in text.split() if w.startswith("--")}
    return _caps_cache[binary]


def command(binary, weights, inputs, precision, device, warmup, iters, json_path, caps, mega=False):
    """The argv of one luminal row, or raises ValueError when the binary lacks a needed flag."""
    cmd = [binary, "run", "--weights", weights, "--inputs", inputs, "--device", device, "--bench",
           "--warmup", str(warmup), "--iters", str(iters), "--json", json_path]
    if "--input-mode" in caps:
        cmd += ["--input-mode", "device"]
    if "--precision" in caps:
        cmd += ["--precision", precision]
    elif precision != "fp32":
        raise ValueError(f"this dlrm binary has no --precision (branch production not merged): {precision} "
                         "cannot run")
    if mega:
        cmd.append("--mega")
    return cmd


def parse_json(res, wall_s):
    """A row from dlrm's --json: the three timings, accuracy (max_abs_diff, and spearman when the binary
    reports it) and setup time."""
    row = {"setup_s": res.get("setup_s", wall_s), "max_abs_diff": res.get("max_abs_diff"),
           "spearman": res.get("spearman"), "path": res.get("path"), "sparse_path": res.get("sparse_path"),
           "precision_run": res.get("precision")}
    bench = res.get("bench")
    if not bench:
        raise ValueError("no 'bench' object in the JSON (run without --bench?)")
    for k in ("events", "latency", "pipelined"):
        row[k] = bench[k]
    return row


def run(binary, weights, inputs, precision, json_path, warmup=20, iters=100, device="cuda", mega=False,
        timeout=300, extra=()):
    """One luminal row: {"backend", ...timings/accuracy} or {"backend", "error"}; never raises. extra:
    more `dlrm run` arguments (e.g. --sparse fused)."""
    row = {"backend": "luminal mega" if mega else "luminal"}
    try:
        cmd = command(binary, weights, inputs, precision, device, warmup, iters, json_path,
                      capabilities(binary), mega) + list(extra)
    except ValueError as e:
        return dict(row, error=str(e))
    if os.path.exists(json_path):
        os.remove(json_path)
    t0 = time.perf_counter()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as e:
        return dict(row, error=f"{type(e).__name__}: {e}"[:400])
    wall = time.perf_counter() - t0
    if not os.path.exists(json_path):
        why = f"exit {p.returncode}" if p.returncode >= 0 else f"killed by signal {-p.returncode}"
        tail = (p.stderr or p.stdout).strip().splitlines()[-3:]
        return dict(row, error=f"{why}: {' | '.join(tail)}"[:400])
    try:
        with open(json_path) as f:
            row.update(parse_json(json.load(f), wall))
    except (ValueError, KeyError) as e:
        return dict(row, error=f"bad --json output: {e}")
    if mega and row.get("path") not in (None, "mega"):
        return dict(row, error=f"megakernel refused this shape (the binary ran the {row['path']} path)")
    if p.returncode != 0:  # e.g. exit 1: beyond the --tol of this precision; keep the numbers, flag it
        row["note"] = f"exit {p.returncode} (accuracy beyond the binary's tolerance?)"
    row["wall_s"] = wall
    return row
