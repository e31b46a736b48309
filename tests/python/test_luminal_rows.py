"""luminal rows from a fake `dlrm` binary (a shell script): JSON parsing, missing flags, failures."""
import json
import os
import stat

import pytest

import luminal_rows

GOOD = {"setup_s": 0.5, "max_abs_diff": 2e-7, "spearman": 0.99999, "path": "graph", "precision": "bf16",
        "bench": {"events": {"mean_us": 5.0}, "latency": {"mean_us": 9.0}, "pipelined": {"mean_us": 4.0}}}


def fake(tmp_path, help_text, body):
    """A script answering `run --help` with help_text, else running body (bash; $JSON is the --json,
    $ALL every argument)."""
    p = tmp_path / "dlrm"
    p.write_text("#!/bin/bash\n"
                 f"if [ \"$2\" = --help ]; then echo '{help_text}'; exit 0; fi\n"
                 "ALL=\"$*\"\n"
                 "while [ $# -gt 0 ]; do [ \"$1\" = --json ] && JSON=$2; shift; done\n" + body)
    p.chmod(p.stat().st_mode | stat.S_IEXEC)
    luminal_rows._caps_cache.clear()
    return str(p)


def test_good_run_parses_the_json(tmp_path):
    b = fake(tmp_path, "--weights --precision TEXT --input-mode", f"echo '{json.dumps(GOOD)}' > $JSON\n")
    r = luminal_rows.run(b, "w", "i", "bf16", str(tmp_path / "o.json"))
    assert r["latency"]["mean_us"] == 9.0 and r["spearman"] == 0.99999 and r["precision_run"] == "bf16"
    assert "error" not in r and "note" not in r


def test_missing_precision_flag_is_an_error_cell_not_fp32(tmp_path):
    b = fake(tmp_path, "--weights --inputs", "exit 0\n")
    r = luminal_rows.run(b, "w", "i", "tf32", str(tmp_path / "o.json"))
    assert "no --precision" in r["error"]
    with pytest.raises(ValueError):
        luminal_rows.command(b, "w", "i", "int8", "cuda", 1, 1, "j", luminal_rows.capabilities(b))
    cmd = luminal_rows.command(b, "w", "i", "fp32", "cuda", 1, 1, "j", luminal_rows.capabilities(b))
    assert "--precision" not in cmd and "--input-mode" not in cmd


def test_crash_and_exit_codes(tmp_path):
    b = fake(tmp_path, "--precision", "echo '[dlrm] bad offsets_3' >&2; exit 2\n")
    r = luminal_rows.run(b, "w", "i", "fp32", str(tmp_path / "o.json"))
    assert r["error"].startswith("exit 2") and "bad offsets_3" in r["error"]
    b = fake(tmp_path, "--precision", "kill -SEGV $$\n")
    assert "signal 11" in luminal_rows.run(b, "w", "i", "fp32", str(tmp_path / "o.json"))["error"]
    b = fake(tmp_path, "--precision", f"echo '{json.dumps(GOOD)}' > $JSON; exit 1\n")
    r = luminal_rows.run(b, "w", "i", "fp32", str(tmp_path / "o.json"))
    assert r["latency"]["mean_us"] == 9.0 and r["note"].startswith("exit 1")


def test_json_without_bench_and_a_stale_json(tmp_path):
    js = tmp_path / "o.json"
    js.write_text(json.dumps(GOOD))  # left over from an earlier run: must not be read as this one's
    b = fake(tmp_path, "--precision", "exit 3\n")
    assert "exit 3" in luminal_rows.run(b, "w", "i", "fp32", str(js))["error"]
    b = fake(tmp_path, "--precision", "echo '{\"setup_s\": 1}' > $JSON\n")
    assert "no 'bench'" in luminal_rows.run(b, "w", "i", "fp32", str(js))["error"]


def test_binary_that_does_not_exist(tmp_path):
    luminal_rows._caps_cache.clear()
    r = luminal_rows.run(str(tmp_path / "nope"), "w", "i", "fp32", str(tmp_path / "o.json"))
    assert "error" in r and os.path.basename(r["error"])


def test_extra_arguments_reach_the_binary(tmp_path):
    body = (f"case \"$ALL\" in *'--sparse fused'*) echo '{json.dumps(GOOD)}' > $JSON;; *) exit 5;; esac\n")
    b = fake(tmp_path, "--precision", body)
    assert "exit 5" in luminal_rows.run(b, "w", "i", "fp32", str(tmp_path / "o.json"))["error"]
    r = luminal_rows.run(b, "w", "i", "fp32", str(tmp_path / "o.json"), extra=["--sparse", "fused"])
    assert r["latency"]["mean_us"] == 9.0


def test_refused_megakernel_is_not_reported_as_one(tmp_path):
    b = fake(tmp_path, "--precision", f"echo '{json.dumps(GOOD)}' > $JSON\n")  # GOOD says path graph
    r = luminal_rows.run(b, "w", "i", "fp32", str(tmp_path / "o.json"), mega=True)
    assert r["backend"] == "luminal mega" and "refused" in r["error"]
    mega = dict(GOOD, path="mega")
    b = fake(tmp_path, "--precision", f"echo '{json.dumps(mega)}' > $JSON\n")
    assert "error" not in luminal_rows.run(b, "w", "i", "fp32", str(tmp_path / "o.json"), mega=True)
