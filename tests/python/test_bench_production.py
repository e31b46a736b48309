"""bench_production.py end to end on the CPU (--cpu-smoke: tiny tables, eager PyTorch only) with a fake
`dlrm` binary, and --dry-run; no GPU."""
import json
import stat

import bench_production
import luminal_rows

LUMINAL = {"setup_s": 0.1, "max_abs_diff": 1e-7, "spearman": 1.0, "path": "graph",
           "bench": {"events": {"mean_us": 1.0}, "latency": {"mean_us": 2.0}, "pipelined": {"mean_us": 1.5}}}


def fake_dlrm(tmp_path):
    p = tmp_path / "dlrm"
    p.write_text("#!/bin/bash\n"
                 "if [ \"$2\" = --help ]; then echo '--weights --precision --input-mode'; exit 0; fi\n"
                 "while [ $# -gt 0 ]; do case $1 in --json) J=$2;; --precision) P=$2;; esac; shift; done\n"
                 "if [ $P = int8 ]; then echo '[dlrm] int8 needs the fused sparse op' >&2; exit 2; fi\n"
                 f"echo '{json.dumps(LUMINAL)}' > $J\n")
    p.chmod(p.stat().st_mode | stat.S_IEXEC)
    luminal_rows._caps_cache.clear()
    return str(p)


def test_dry_run_prints_the_plan(capsys):
    assert bench_production.main(["--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "[plan] 24 cells" in out and "estimated" in out and "trimmed" in out


def test_cpu_smoke_end_to_end(tmp_path, capsys):
    out = tmp_path / "out"
    rc = bench_production.main(["--cpu-smoke", "--presets", "kaggle", "--precisions", "fp32", "bf16", "int8",
                                "--dlrm", fake_dlrm(tmp_path), "--out", str(out), "--work", str(tmp_path / "w")])
    assert rc == 0
    res = json.loads((out / "production.json").read_text())
    assert len(res["cells"]) == 2 * 3  # batches 8 and 32 x 3 precisions
    by = {(c["batch"], c["precision"]): c for c in res["cells"]}
    fp32 = {r["backend"]: r for r in by[(32, "fp32")]["rows"]}
    assert fp32["luminal"]["latency"]["mean_us"] == 2.0
    assert fp32["pytorch eager"]["max_abs_diff"] < 1e-6 and fp32["pytorch eager"]["spearman"] > 0.999
    bf16 = {r["backend"]: r for r in by[(32, "bf16")]["rows"]}["pytorch eager"]
    assert 0 < bf16["max_abs_diff"] < 5e-2 and bf16["spearman"] > 0.9  # bf16 differs, but ranks hold
    int8 = by[(32, "int8")]["rows"]
    assert "int8 needs the fused sparse op" in int8[0]["error"]
    assert int8[1]["label"] == "PyTorch bf16, no int8 path"
    assert int8[1]["max_abs_diff"] == bf16["max_abs_diff"]  # the same bf16 measurement, labelled
    md = (out / "production.md").read_text()
    assert "| kaggle | 32 | int8 | luminal | failed: exit 2" in md and "**Winner per cell**" in md


def test_bench_py_cpu_smoke_with_precision_and_preset(tmp_path, monkeypatch):
    import tempfile

    import bench
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # bench.py's export dir goes under tmp_path
    out = tmp_path / "out"
    bench.main(["--device", "cpu", "--preset", "kaggle", "--max-rows", "100", "--batch", "16", "--precision",
                "int8", "--warmup", "1", "--iters", "2", "--dlrm", fake_dlrm(tmp_path), "--out", str(out)])
    res = json.loads((out / "bench.json").read_text())
    names = {r["name"]: r for r in res["rows"]}
    assert "pytorch eager [PyTorch bf16: no int8 path]" in names
    assert "int8 needs the fused sparse op" in names["luminal graph path"]["error"]
    assert res["roofline"]["rate_precision"] == "bf16" and res["config"]["ln_emb"][2] == 100
