"""examples/dlrm/export.py: presets, caps, jagged bags, power-law rows, dtypes, the streaming writer and
the committed fixtures (re-exported byte for byte). CPU only, small shapes."""
import filecmp
import json
import os

import numpy as np
import pytest
import torch
from safetensors import safe_open
from safetensors.torch import save_file

import export as ex
import safetensors_stream as sst

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "dlrm")


def load(path):
    with safe_open(path, "pt") as f:
        return {k: f.get_tensor(k) for k in f.keys()}, f.metadata()


def tiny(preset="kaggle", batch=16, **kw):
    return ex.from_preset(preset, batch, max_rows=kw.pop("max_rows", 300), **kw)


@pytest.mark.parametrize("name,args", [
    ("seed", "--m-spa 4 --ln-emb 10-20-30 --ln-bot 13-8-4 --ln-top 10-8-1 --batch 16 --bag 1 --seed 0"),
    ("tables8_bag3", "--m-spa 8 --ln-emb 10-20-30-40-50-60-70-80 --ln-bot 13-16-8 --ln-top 44-16-1 "
                     "--batch 16 --bag 3 --seed 1"),
    ("deep", "--m-spa 16 --ln-emb 100-50-25 --ln-bot 13-64-32-16 --ln-top 22-64-32-1 --batch 16 --bag 2 "
             "--seed 2 --index-dtype int64"),
])
def test_fixtures_reexport_byte_identical(tmp_path, name, args):
    # Weights, dense_x, indices and offsets: byte for byte. `expected` is PyTorch's CPU fp32 output, whose
    # last bit depends on the torch build and the CPU (the first export.py itself gives 1-ulp differences
    # under torch 2.15 on the dev machine), so it gets 1 ulp; everything else in the file must be equal.
    ex.main(args.split() + ["--out", str(tmp_path)])
    fix = os.path.join(FIXTURES, name)
    assert filecmp.cmp(tmp_path / "weights.safetensors", os.path.join(fix, "weights.safetensors"), shallow=False)
    got, _ = load(tmp_path / "inputs.safetensors")
    want, _ = load(os.path.join(fix, "inputs.safetensors"))
    assert sst.read_header(str(tmp_path / "inputs.safetensors")) == sst.read_header(os.path.join(fix, "inputs.safetensors"))
    for k in want:
        if k == "expected":
            assert float((got[k] - want[k]).abs().max()) <= 1.2e-7, f"{name}/expected moved more than 1 ulp"
        else:
            assert torch.equal(got[k], want[k]), f"{name}/{k} changed"


def test_presets_shapes_and_real_table_sizes():
    k = ex.from_preset("kaggle", 2048)
    assert (k.m_spa, k.ln_bot, k.ln_top, len(k.ln_emb)) == (16, [13, 512, 256, 64, 16], [367, 512, 256, 1], 26)
    assert sum(k.ln_emb) == 33762577 and max(k.ln_emb) == 10131227 and k.full_ln_emb is None
    m = ex.from_preset("mlperf", 2048)
    assert (m.m_spa, m.ln_bot, m.ln_top) == (128, [13, 512, 256, 128], [479, 1024, 1024, 512, 256, 1])
    assert max(m.ln_emb) == 39979771 < 40_000_000 and sum(m.ln_emb) == 187767399
    c = ex.from_preset("mlperf", 2048, max_rows=1000)
    assert max(c.ln_emb) == 1000 and min(c.ln_emb) == 3 and c.full_ln_emb == m.ln_emb


def test_cli_preset_with_cap_writes_capped_tables_and_says_so(tmp_path, capsys):
    ex.main(["--preset", "kaggle", "--max-rows", "200", "--batch", "8", "--out", str(tmp_path)])
    assert "NOT the full model" in capsys.readouterr().out
    w, _ = load(tmp_path / "weights.safetensors")
    assert [w[f"emb_l.{k}.weight"].shape[0] for k in range(26)] == [min(v, 200) for v in ex.KAGGLE_TABLES]
    assert w["emb_l.0.weight"].shape[1] == 16 and w["top_l.0.weight"].shape == (512, 367)


def test_expected_equals_full_model_eager(tmp_path):
    # The compact gather path must give PyTorch's fp32 eager output of the whole model exactly.
    for kw in [dict(), dict(mode="mean", bag_dist="random", bag=3), dict(table_dtype="bf16")]:
        cfg = tiny("kaggle", 32, **kw)
        ex.export(cfg, str(tmp_path), progress=lambda s: None)
        t, _ = load(tmp_path / "inputs.safetensors")
        with torch.no_grad():
            full = ex.build_model(cfg)(*ex.make_inputs(cfg))
        assert torch.equal(t["expected"], full), kw
        assert 0.0 < float(t["expected"].min()) < float(t["expected"].max()) < 1.0


def test_jagged_offsets_monotone_in_range_with_empty_bags(tmp_path):
    cfg = tiny("kaggle", 64, bag_dist="random", bag_means=[1, 3] * 13, index_dtype="int64")
    ex.export(cfg, str(tmp_path), progress=lambda s: None)
    t, _ = load(tmp_path / "inputs.safetensors")
    empty = 0
    for k in range(26):
        idx, off = t[f"indices_{k}"], t[f"offsets_{k}"]
        assert idx.dtype == torch.int64 and off.dtype == torch.int32 and off.shape == (64,)
        assert off[0] == 0 and bool((off[1:] >= off[:-1]).all()) and int(off[-1]) <= len(idx)
        assert int(idx.min()) >= 0 and int(idx.max()) < cfg.ln_emb[k]
        lengths = torch.diff(off.long(), append=torch.tensor([len(idx)]))
        empty += int((lengths == 0).sum())
    assert empty > 0, "random bags include empty ones"
    means = [len(t[f"indices_{k}"]) / 64 for k in range(26)]
    assert np.mean(means[0::2]) < np.mean(means[1::2])  # per-table means respected


def test_powerlaw_rows_are_skewed_and_seeded():
    def share_top1(dist):
        cfg = ex.DlrmConfig(4, [100000], [13, 4], [5, 1], 50000, dist=dist, alpha=1.05, table_init="chunked")
        idx = ex.make_inputs(cfg)[1][0]
        counts = torch.bincount(idx, minlength=100000).sort(descending=True).values
        return float(counts[:1000].sum()) / len(idx), idx
    p, a = share_top1("powerlaw")
    u, _ = share_top1("uniform")
    assert p > 0.5 and u < 0.1  # top 1% of rows: ~68% of lookups (Zipf 1.05) vs ~6% (50k draws, 100k rows)
    assert torch.equal(a, share_top1("powerlaw")[1])
    assert int(a.min()) >= 0 and int(a.max()) < 100000


def test_index_dtypes_and_bf16_tables(tmp_path):
    cfg = tiny("mlperf", 8, max_rows=100, table_dtype="bf16", index_dtype="int32")
    ex.export(cfg, str(tmp_path), progress=lambda s: None)
    w, _ = load(tmp_path / "weights.safetensors")
    t, meta = load(tmp_path / "inputs.safetensors")
    assert w["emb_l.0.weight"].dtype == torch.bfloat16 and w["bot_l.0.weight"].dtype == torch.float32
    assert t["indices_0"].dtype == torch.int32 and meta is None
    fp32 = ex.build_model(ex.from_preset("mlperf", 8, max_rows=100)).emb_l[0].weight
    assert torch.equal(w["emb_l.0.weight"], fp32.to(torch.bfloat16))  # the fp32 table, rounded


def test_mean_mode_metadata(tmp_path):
    ex.export(tiny(mode="mean"), str(tmp_path), progress=lambda s: None)
    assert load(tmp_path / "inputs.safetensors")[1] == {"embedding_bag_mode": "mean"}
    assert load(tmp_path / "weights.safetensors")[1] == {"embedding_bag_mode": "mean"}


def test_chunked_tables_do_not_depend_on_chunking():
    cfg = tiny("kaggle", 8, max_rows=ex.CHUNK_ROWS + 5)
    k = cfg.ln_emb.index(ex.CHUNK_ROWS + 5)
    whole = torch.cat([ex.chunk_rows(cfg, k, 0), ex.chunk_rows(cfg, k, 1)])
    assert whole.shape == (ex.CHUNK_ROWS + 5, 16)
    assert torch.equal(ex.chunk_rows(cfg, k, 1), whole[ex.CHUNK_ROWS:])
    assert not torch.equal(ex.chunk_rows(cfg, k, 0)[:5], ex.chunk_rows(cfg, k + 1, 0)[:5])


def test_writer_matches_save_file(tmp_path):
    g = torch.Generator().manual_seed(3)
    tensors = {"b": torch.rand(3, 5, generator=g), "a": torch.randint(0, 9, (7,), generator=g),
               "z": torch.rand(4, generator=g).to(torch.bfloat16), "emb_l.10.weight": torch.rand(2, 2),
               "emb_l.2.weight": torch.rand(2, 2), "i": torch.arange(3, dtype=torch.int32)}
    save_file(tensors, str(tmp_path / "ref.safetensors"), metadata={"k": "v"})
    sst.save_small(tensors, str(tmp_path / "ours.safetensors"), {"k": "v"})
    assert (tmp_path / "ref.safetensors").read_bytes() == (tmp_path / "ours.safetensors").read_bytes()


def test_sharded_weights_index_and_reload(tmp_path):
    cfg = tiny("kaggle", 8)
    path = ex.write_weights(cfg, str(tmp_path), shard_gb=40e3 / 2**30, progress=lambda s: None)
    index = json.loads(open(path).read())
    files = set(index["weight_map"].values())
    assert path.endswith("model.safetensors.index.json") and len(files) > 2
    data_bytes = [os.path.getsize(tmp_path / f) - sst.read_header(str(tmp_path / f))[1] for f in files]
    assert index["metadata"]["total_size"] == sum(data_bytes)
    whole = ex.write_weights(cfg, str(tmp_path / "one"), progress=lambda s: None)
    ref, _ = load(whole)
    got = {}
    for f in files:
        got.update(load(tmp_path / f)[0])
    assert got.keys() == ref.keys() and all(torch.equal(got[k], ref[k]) for k in ref)
    # and expected computed from the shards equals the one from the single file
    x = ex.make_inputs(cfg)
    assert torch.equal(ex.expected_output(cfg, path, x), ex.expected_output(cfg, whole, x))


def test_bad_configs_are_clear_errors():
    with pytest.raises(ValueError, match="ln_top"):
        ex.DlrmConfig(4, [10, 20], [13, 4], [9, 1], 8).validate()
    with pytest.raises(ValueError, match="bag_means"):
        ex.DlrmConfig(4, [10, 20], [13, 4], [7, 1], 8, bag_means=[1]).validate()
    with pytest.raises(ValueError, match="dist"):
        ex.DlrmConfig(4, [10, 20], [13, 4], [7, 1], 8, dist="zipf").validate()
    with pytest.raises(SystemExit):
        ex.main(["--ln-emb", "10-20", "--out", "/tmp/x"])  # no --m-spa and no --preset


def test_first_api_dlrm_cfg_still_builds_the_legacy_model():
    cfg = ex.DlrmConfig(4, [10, 20, 30], [13, 8, 4], [10, 8, 1], 16)
    torch.manual_seed(cfg.seed)
    old = ex.DLRM(cfg).state_dict()
    new = ex.build_model(cfg).state_dict()
    assert old.keys() == new.keys() and all(torch.equal(old[k], new[k]) for k in old)


def test_weights_bigger_than_the_disk_are_refused_before_writing(tmp_path, monkeypatch):
    import collections
    monkeypatch.setattr(ex.shutil, "disk_usage", lambda p: collections.namedtuple("U", "total used free")(1, 1, 10))
    with pytest.raises(ValueError, match=r"\[export\] .* need .* GB, 0.0 GB free"):
        ex.write_weights(tiny("kaggle", 8), str(tmp_path), progress=lambda s: None)
    assert not os.listdir(tmp_path)
