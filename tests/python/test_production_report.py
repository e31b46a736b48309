"""Rendering the production sweep's tables from a canned result (no GPU, no torch)."""
import json
import os

import data_canned
import production_report as rep


def test_winner_per_cell_is_the_lowest_latency():
    cells = data_canned.result()["cells"]
    assert rep.winner(cells[0])["backend"] == "luminal"
    assert rep.winner(cells[1])["backend"] == "CUDA-graph replay"  # the failed luminal row is no winner
    assert rep.winner({"rows": [{"backend": "x", "error": "e"}]}) is None


def test_rows_fastest_first_with_floor_ratio_and_throughput():
    lines = rep.cell_lines(data_canned.result()["cells"][0])
    assert [ln.split(" | ")[3] for ln in lines] == ["luminal", "CUDA-graph replay", "pytorch eager"]
    first = lines[0].split(" | ")
    assert first[4] == "150.0" and first[5] == "147.0" and first[6] == "120.0"
    assert first[7] == "1.71e+07"            # 2048 / 120 us
    assert first[8] == "29.9" and first[9] == "5.0"  # floor, latency / floor = 150 / 29.85


def test_failed_row_is_a_cell_with_its_error_and_label_shown():
    lines = rep.cell_lines(data_canned.result()["cells"][1])
    assert "failed: exit 2: [dlrm] unknown precision / int8" in lines[-1]  # '|' escaped for markdown
    assert "CUDA-graph replay [PyTorch bf16, no int8 path]" in lines[0]


def test_render_has_every_section():
    md = rep.render(data_canned.result())
    assert "| kaggle | 2048 | luminal (150.0) | CUDA-graph replay [PyTorch bf16, no int8 path] (200.0) |" in md
    assert "**Throughput at batch 2048**" in md and "| kaggle | int8 | CUDA-graph replay" in md
    assert "| kaggle | 2048 | fp32 | 2.00 | 4.0 | 29.9 | 0.9 | 29.9 | compute |" in md
    assert "- torch.compile at batch 256: not run" in md
    assert "4.27 TB/s" in md


def test_write_all_writes_md_and_json(tmp_path):
    table = rep.write_all(data_canned.result(), str(tmp_path))
    assert (tmp_path / "production.md").read_text().strip() == table
    back = json.loads((tmp_path / "production.json").read_text())
    assert back["cells"][0]["rows"][0]["latency"]["mean_us"] == 150.0
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return
    assert os.path.getsize(tmp_path / "production.png") > 1000


def test_a_note_is_shown_with_the_backend():
    cell = data_canned.result()["cells"][0]
    cell["rows"][0]["note"] = "exit 1 (accuracy beyond the binary's tolerance?)"
    assert "| luminal [exit 1 (accuracy beyond the binary's tolerance?)] | 150.0 |" in rep.cell_lines(cell)[0]
