"""examples/dlrm/export_v2.py: torchrec DLRM_DCN state_dict names and shapes, the forward against a
hand-written per-sample computation, the written files, empty bags and the oversized-export refusal.
CPU only, small shapes."""
import os

import pytest
import torch
from safetensors import safe_open

import export_v2 as ev2


def small(**kw):
    return ev2.from_preset("dlrm-v2-small", **kw)


def load(path):
    with safe_open(path, "pt") as f:
        return {k: f.get_tensor(k) for k in f.keys()}, f.metadata()


def test_state_dict_names_and_shapes():
    cfg = small(batch=4)
    sd = ev2.build_model(cfg).state_dict()
    n = 5 * 16  # (4 tables + dense) x d
    want = {
        "dense_arch.model._mlp.0._linear.weight": [64, 13], "dense_arch.model._mlp.0._linear.bias": [64],
        "dense_arch.model._mlp.1._linear.weight": [16, 64], "dense_arch.model._mlp.1._linear.bias": [16],
        "over_arch.model.0._mlp.0._linear.weight": [32, n], "over_arch.model.0._mlp.0._linear.bias": [32],
        "over_arch.model.0._mlp.1._linear.weight": [16, 32], "over_arch.model.0._mlp.1._linear.bias": [16],
        "over_arch.model.1.weight": [1, 16], "over_arch.model.1.bias": [1],
    }
    for l in range(2):
        want[f"inter_arch.crossnet.V_kernels.{l}"] = [8, n]
        want[f"inter_arch.crossnet.W_kernels.{l}"] = [n, 8]
        want[f"inter_arch.crossnet.bias.{l}"] = [n]
    for k in range(4):
        want[f"sparse_arch.embedding_bag_collection.embedding_bags.t_cat_{k}.weight"] = [1000, 16]
    assert {k: list(v.shape) for k, v in sd.items()} == want
    assert all(v.dtype == torch.float32 for v in sd.values())


def test_full_preset_shapes_without_building():
    cfg = ev2.from_preset("dlrm-v2")
    assert cfg.keys()[0] == "cat_0" and cfg.keys()[-1] == "cat_25" and sum(cfg.hots) == 214
    n = 27 * 128
    mlp = (14 * 512 + 513 * 256 + 257 * 128) + (n + 1) * 1024 + 1025 * 1024 + 1025 * 512 + 513 * 256 + 257
    assert ev2.weight_bytes(cfg) == 4 * (sum(ev2.MLPERF_ROWS) * 128 + mlp + 3 * (2 * n * 512 + n))


def by_hand(sd, cfg, dense, values, lengths):
    """Per sample, in float64, straight from the formulas (no nn modules)."""
    p = {k: v.double() for k, v in sd.items()}
    out = []
    starts = [torch.cumsum(n.long(), 0) - n.long() for n in lengths]
    for b in range(dense.shape[0]):
        h = dense[b].double()
        for i in range(len(cfg.ln_bot) - 1):
            h = torch.relu(p[f"dense_arch.model._mlp.{i}._linear.weight"] @ h
                           + p[f"dense_arch.model._mlp.{i}._linear.bias"])
        parts = [h]
        for k, key in enumerate(cfg.keys()):
            t = p[f"sparse_arch.embedding_bag_collection.embedding_bags.t_{key}.weight"]
            s, n = int(starts[k][b]), int(lengths[k][b])
            pooled = torch.zeros(cfg.dim, dtype=torch.float64)
            for j in range(s, s + n):
                pooled = pooled + t[int(values[k][j])]
            parts.append(pooled)
        x0 = torch.cat(parts)
        x = x0
        for l in range(cfg.cross_layers):
            v, w = p[f"inter_arch.crossnet.V_kernels.{l}"], p[f"inter_arch.crossnet.W_kernels.{l}"]
            x = x0 * (w @ (v @ x) + p[f"inter_arch.crossnet.bias.{l}"]) + x
        for i in range(len(cfg.ln_top)):
            x = torch.relu(p[f"over_arch.model.0._mlp.{i}._linear.weight"] @ x
                           + p[f"over_arch.model.0._mlp.{i}._linear.bias"])
        out.append(p["over_arch.model.1.weight"] @ x + p["over_arch.model.1.bias"])
    return torch.stack(out)


@pytest.mark.parametrize("bag_dist,index_dtype", [("fixed", "int32"), ("random", "int64")])
def test_forward_matches_hand_written(bag_dist, index_dtype):
    cfg = small(batch=8, bag_dist=bag_dist, index_dtype=index_dtype, seed=3)
    model = ev2.build_model(cfg)
    inputs = ev2.make_inputs(cfg)
    with torch.no_grad():
        got = model(*inputs)
        ref = by_hand(model.state_dict(), cfg, *inputs)
        assert got.shape == (8, 1)
        assert (got.double() - ref).abs().max().item() < 1e-5
        assert (ev2.forward_fp64(model, inputs) - ref).abs().max().item() < 1e-12
        assert got.std().item() > 1e-3  # the logit depends on the inputs


def test_files_round_trip(tmp_path):
    cfg = small(batch=16, bag_dist="random", index_dtype="int64", seed=1)
    expected, noise = ev2.export(cfg, str(tmp_path), progress=lambda s: None)
    assert noise < 1e-5
    w, wmeta = load(os.path.join(tmp_path, "weights.safetensors"))
    sd = ev2.build_model(cfg).state_dict()
    assert sorted(w) == sorted(sd) and wmeta["model"] == "dlrm_dcn"
    assert all(torch.equal(w[k], sd[k]) for k in sd)
    x, xmeta = load(os.path.join(tmp_path, "inputs.safetensors"))
    assert xmeta["feature_keys"].split(",") == cfg.keys()
    assert x["dense_features"].dtype == torch.float32 and list(x["dense_features"].shape) == [16, 13]
    assert x["expected"].dtype == torch.float32 and torch.equal(x["expected"], expected)
    values, lengths = [], []
    for k, key in enumerate(cfg.keys()):
        v, n = x[f"values_{key}"], x[f"lengths_{key}"]
        assert v.dtype == n.dtype == torch.int64 and v.dim() == 1 and list(n.shape) == [16]
        assert int(n.sum()) == v.numel() and int(n.max()) <= 2 * cfg.hots[k]
        assert v.numel() == 0 or (0 <= int(v.min()) and int(v.max()) < cfg.rows[k])
        values.append(v)
        lengths.append(n)
    with torch.no_grad():  # the files alone reproduce `expected`
        assert torch.equal(ev2.build_model(cfg)(x["dense_features"], values, lengths), x["expected"])


def test_fixed_bags_have_the_multi_hot_sizes():
    cfg = small(batch=5, hots=[0, 1, 7, 2])
    _, values, lengths = ev2.make_inputs(cfg)
    assert [n.tolist() for n in lengths] == [[h] * 5 for h in cfg.hots]
    assert [v.numel() for v in values] == [5 * h for h in cfg.hots]


def test_empty_bags_pool_to_zero():
    cfg = small(batch=64, bag_dist="random", hots=[1, 1, 1, 1])
    model = ev2.build_model(cfg)
    _, values, lengths = ev2.make_inputs(cfg)
    with torch.no_grad():
        pooled = model.sparse_arch(values, lengths)
    empty = torch.stack(lengths, dim=1) == 0  # [B, F]
    assert empty.any() and (~empty).any()
    assert torch.all(pooled[empty] == 0)
    assert torch.all(pooled[~empty].abs().sum(-1) > 0)


def test_oversized_export_refused(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(ev2, "free_resources", lambda out: (50 * 10**9, 20 * 10**9))
    out = tmp_path / "full"
    with pytest.raises(SystemExit) as e:
        ev2.main(["--preset", "dlrm-v2", "--batch", "4", "--out", str(out)])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert "104.6 GB" in err and "20.0 GB RAM available" in err and "50.0 GB free" in err
    assert "--max-rows" in err and not out.exists()


def test_bad_shape_is_a_clear_error():
    with pytest.raises(ValueError, match="ln_bot ends with 16, dim is 32"):
        small(dim=32)


def test_matches_torchrec_dlrm_dcn():
    pytest.importorskip("torchrec", reason="torchrec not installed: the torchrec comparison is skipped")
    from torchrec.models.dlrm import DLRM_DCN
    from torchrec.modules.embedding_configs import EmbeddingBagConfig
    from torchrec.modules.embedding_modules import EmbeddingBagCollection
    from torchrec.sparse.jagged_tensor import KeyedJaggedTensor

    cfg = small(batch=8, bag_dist="random", index_dtype="int64")
    ours = ev2.build_model(cfg)
    ebc = EmbeddingBagCollection(tables=[
        EmbeddingBagConfig(name=f"t_{key}", embedding_dim=cfg.dim, num_embeddings=rows, feature_names=[key])
        for key, rows in zip(cfg.keys(), cfg.rows)])
    ref = DLRM_DCN(ebc, dense_in_features=cfg.ln_bot[0], dense_arch_layer_sizes=cfg.ln_bot[1:],
                   over_arch_layer_sizes=cfg.ln_top + [1], dcn_num_layers=cfg.cross_layers,
                   dcn_low_rank_dim=cfg.cross_rank)
    ref.load_state_dict(ours.state_dict())  # strict: the names and shapes must be torchrec's
    dense, values, lengths = ev2.make_inputs(cfg)
    kjt = KeyedJaggedTensor.from_lengths_sync(keys=cfg.keys(), values=torch.cat(values),
                                              lengths=torch.cat(lengths))
    with torch.no_grad():
        assert torch.allclose(ref.eval()(dense, kjt), ours(dense, values, lengths), atol=1e-6)
