"""torchrec's own models with KeyedJaggedTensor inputs through luminal's three entries:
luminal.compile (torch.export), torch.compile(backend=luminal.backend) and a saved .pt2 loaded with
luminal.load, each against torchrec eager (fp32, 1e-5), batch dynamic, empty bags; and the bad inputs
a KJT can carry. Runs where torchrec imports (tools/test runs it in build/torchrec-venv with
LUMINAL_REQUIRE_TORCHREC=1, where a missing torchrec fails instead of skipping)."""

import os
import sys

import pytest
import torch

if os.environ.get("LUMINAL_REQUIRE_TORCHREC") != "1":
    pytest.importorskip("torchrec")

import luminal  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "fixtures", "torchrec"))
import make_torchrec_fixtures as trf  # noqa: E402
from torchrec.sparse.jagged_tensor import KeyedJaggedTensor  # noqa: E402

MODELS = ("dlrm_dcn", "dlrm", "dlrm_projection")
TOL = 1e-5


def _compiled(kind, device):
    m = trf.build(kind)
    return m, luminal.compile(m, trf.batch(4, 0), dynamic_shapes=trf.dynamic_shapes(), device=device)


@pytest.mark.parametrize("kind", MODELS)
@pytest.mark.parametrize("device", ["cpu", "reference"])
def test_compile_matches_torchrec_across_batches(kind, device):
    m, cm = _compiled(kind, device)
    for b, seed in ((4, 10), (1, 11), (37, 12), (4, 13)):
        dense, kjt = trf.batch(b, seed)
        want = m(dense, kjt)
        got = cm(dense, kjt)
        assert got.shape == want.shape
        assert (got - want).abs().max().item() <= TOL, f"batch {b}"


def test_int32_values_and_a_kjt_built_from_offsets():
    m, cm = _compiled("dlrm_dcn", "cpu")
    dense, kjt = trf.batch(6, 20)
    from_offsets = KeyedJaggedTensor.from_offsets_sync(keys=kjt.keys(), values=kjt.values(), offsets=kjt.offsets())
    assert (cm(dense, from_offsets) - m(dense, kjt)).abs().max().item() <= TOL
    m32 = trf.build("dlrm")
    dense, kjt32 = trf.batch(5, 21, torch.int32)
    cm32 = luminal.compile(m32, trf.batch(4, 0, torch.int32), dynamic_shapes=trf.dynamic_shapes())
    assert (cm32(dense, kjt32) - m32(dense, kjt32)).abs().max().item() <= TOL


@pytest.mark.parametrize("kind", ["dlrm_dcn", "dlrm"])
def test_torch_compile_backend_matches_torchrec(kind):
    m = trf.build(kind)
    compiled = torch.compile(m, backend=luminal.backend)
    for b, seed in ((5, 30), (9, 31)):
        dense, kjt = trf.batch(b, seed)
        assert (compiled(dense, kjt) - m(dense, kjt)).abs().max().item() <= TOL, f"batch {b}"


def _weighted_dlrm():
    """torchrec's DLRM over a weighted EmbeddingBagCollection (per-id weights in the KJT)."""
    from torchrec.models.dlrm import DLRM
    from torchrec.modules.embedding_configs import EmbeddingBagConfig
    from torchrec.modules.embedding_modules import EmbeddingBagCollection
    torch.manual_seed(3)
    tables = [EmbeddingBagConfig(name=f"t_{k}", embedding_dim=trf.DIM, num_embeddings=n, feature_names=[k])
              for k, n in zip(trf.KEYS, trf.ROWS)]
    ebc = EmbeddingBagCollection(tables=tables, device=torch.device("cpu"), is_weighted=True)
    return DLRM(embedding_bag_collection=ebc, dense_in_features=13, dense_arch_layer_sizes=[16, trf.DIM],
                over_arch_layer_sizes=[16, 1]).eval()


def _weighted_batch(b, seed):
    dense, kjt = trf.batch(b, seed)
    w = torch.rand(kjt.values().numel(), generator=torch.Generator().manual_seed(seed)) * 4 - 2
    return dense, KeyedJaggedTensor.from_lengths_sync(keys=kjt.keys(), values=kjt.values(), lengths=kjt.lengths(),
                                                      weights=w)


@pytest.mark.parametrize("device", ["cpu", "reference"])
def test_weighted_kjt_matches_torchrec(device):
    """A weighted KJT's weights scale each id's row (EmbeddingBag's per_sample_weights), the batch dynamic."""
    m = _weighted_dlrm()
    ds = trf.dynamic_shapes()
    ds = (ds[0], [ds[1][0], {0: ds[1][0][0]}, *ds[1][2:]])  # weights as long as the values
    cm = luminal.compile(m, _weighted_batch(4, 0), dynamic_shapes=ds, device=device)
    for b, seed in ((5, 70), (1, 71), (23, 72)):
        dense, kjt = _weighted_batch(b, seed)
        assert (cm(dense, kjt) - m(dense, kjt)).abs().max().item() <= TOL, f"batch {b}"
    unweighted_dense, unweighted = trf.batch(5, 73)
    with pytest.raises(TypeError, match="weights"):  # the program was exported with weights
        cm(unweighted_dense, unweighted)


def _dlrm_rule_lines(stats):
    return [r for r in stats.get("rules", []) if r.startswith("dlrm:")]


def test_dlrm_rule_fuses_torchrecs_dot_interaction_from_both_entries():
    """torchrec's DLRM (KJT bags, triu pair order, a logit out) is the dlrm rule's model: the CPU
    backend runs the fused sparse kernel (bags + interaction) from luminal.compile and from
    torch.compile, at torchrec eager's outputs."""
    m, cm = _compiled("dlrm", "cpu")
    lines = _dlrm_rule_lines(cm.stats())
    assert len(lines) == 1 and "triu pairs" in lines[0] and lines[0].split(" -> ")[1].startswith("fused_sparse"), lines
    captured = []

    def capturing(gm, example_inputs):
        call = luminal.backend(gm, example_inputs)
        captured.append(call.__self__)
        return call

    compiled = torch.compile(m, backend=capturing)
    for b, seed in ((6, 60), (3, 61)):
        dense, kjt = trf.batch(b, seed)
        assert (compiled(dense, kjt) - m(dense, kjt)).abs().max().item() <= TOL, f"batch {b}"
    rules = [r for c in captured for p in c.programs.values() for r in _dlrm_rule_lines(p.stats())]
    captured.clear()
    torch._dynamo.reset()  # dynamo's cache would hold the programs to interpreter exit
    assert any(" -> fused_sparse" in r for r in rules), rules


def test_saved_archive_loads_and_matches(tmp_path):
    m = trf.build("dlrm_dcn")
    ep = torch.export.export(m, trf.batch(4, 0), dynamic_shapes=trf.dynamic_shapes(), strict=False)
    path = tmp_path / "dlrm_dcn.pt2"
    torch.export.save(ep, str(path))
    loaded = luminal.load(path)
    dense, kjt = trf.batch(7, 40)
    assert (loaded(dense, kjt) - m(dense, kjt)).abs().max().item() <= TOL


def test_bad_kjts_are_clear_errors():
    m, cm = _compiled("dlrm_dcn", "cpu")
    dense, kjt = trf.batch(5, 50)
    keys, values, lengths = kjt.keys(), kjt.values(), kjt.lengths()
    reordered = KeyedJaggedTensor.from_lengths_sync(keys=[keys[0], keys[2], keys[1]], values=values, lengths=lengths)
    with pytest.raises(TypeError, match=r"keys \['cat_0', 'cat_2', 'cat_1'\], the program was exported with"):
        cm(dense, reordered)
    missing = KeyedJaggedTensor.from_lengths_sync(keys=keys[:2], values=values, lengths=lengths[:10])
    with pytest.raises(TypeError, match="keys"):
        cm(dense, missing)
    weighted = KeyedJaggedTensor.from_lengths_sync(keys=keys, values=values, lengths=lengths,
                                                   weights=torch.ones(values.numel()))
    with pytest.raises(TypeError, match="weights"):
        cm(dense, weighted)
    for cut in (values[:-1], torch.cat([values, values[:1]])):  # lengths not summing to the values
        short = KeyedJaggedTensor.from_lengths_sync(keys=keys, values=cut, lengths=lengths)
        with pytest.raises(RuntimeError, match="lengths that do not sum to its values"):
            cm(dense, short)
    out_of_range = KeyedJaggedTensor.from_lengths_sync(keys=keys, values=torch.full_like(values, 10_000),
                                                       lengths=lengths)
    with pytest.raises(RuntimeError, match="out-of-range"):
        cm(dense, out_of_range)
    _, other_batch = trf.batch(4, 51)  # lengths for 4 samples beside 5 dense rows
    with pytest.raises(ValueError, match=r"input 'sparse_features__lengths' has shape \[12\]"):
        cm(dense, other_batch)
    assert (cm(dense, kjt) - m(dense, kjt)).abs().max().item() <= TOL  # still usable after the errors
