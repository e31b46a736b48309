"""The Python API against eager PyTorch: luminal.compile, torch.compile(backend=luminal.backend) and
luminal.load, on an MLP and a DLRM_Net with nested list inputs; static and dynamic batch; stats.
LUMINAL_TEST_DEVICE=cuda runs the same tests on the CUDA runtime."""
import copy
import re

import pytest
import torch
from torch.export import Dim

import luminal
from aten_check import DEVICE, on_device
from dlrm_net import seed_inputs, seed_model


def mlp():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4), torch.nn.Sigmoid())


def dlrm_dynamic_shapes():
    batch = Dim("batch", min=2, max=4096)
    return {"dense_x": {0: batch}, "lS_o": {1: batch},
            "lS_i": [{0: Dim(f"nnz{k}", min=2, max=1 << 20)} for k in range(3)]}


def eager(model, *inputs):
    with torch.no_grad():
        return model(*inputs)


def fresh_dynamo():
    torch._dynamo.reset()


@pytest.fixture
def backend_calls(monkeypatch):
    """Counts the graphs dynamo hands to luminal.backend and the luminal programs they build."""
    import luminal.dynamo as lb

    seen = {"graphs": 0, "programs": 0}
    modules = []  # the CompiledModules built, outside `seen` (whose counts tests compare)
    real_backend, real_compile = lb.backend, lb.aot_compile

    def counting_backend(gm, example_inputs, **kw):
        seen["graphs"] += 1
        return real_backend(gm, example_inputs, **kw)

    def counting_compile(*a, **kw):
        seen["programs"] += 1
        modules.append(real_compile(*a, **kw))
        return modules[-1]

    counting_backend.modules = modules

    monkeypatch.setattr(lb, "aot_compile", counting_compile)
    fresh_dynamo()
    yield counting_backend, seen
    fresh_dynamo()
    # dynamo may keep the backend function (its last error, say) past the test: drop the programs it
    # holds, or they outlive the interpreter's teardown (nanobind's "leaked instance" warning).
    modules.clear()


# ---- luminal.compile ----

def test_compile_mlp_equals_eager():
    m = mlp().to(DEVICE).eval()
    x = on_device(torch.randn(5, 8))
    fast = luminal.compile(m, (x,))
    torch.testing.assert_close(fast(x), eager(m, x))
    x2 = on_device(torch.randn(5, 8))  # new values, same shape: no stale result
    torch.testing.assert_close(fast(x2), eager(m, x2))


def test_compile_dlrm_nested_list_inputs():
    m = seed_model().to(DEVICE)
    inputs = on_device(seed_inputs(64))
    fast = luminal.compile(m, inputs)
    assert len(fast.input_names) == 5  # dense_x, lS_o and the 3 index tensors of the list
    torch.testing.assert_close(fast(*inputs), eager(m, *inputs), atol=1e-5, rtol=1e-5)
    other = on_device(seed_inputs(64, seed=7))
    if [t.shape for t in other[2]] == [t.shape for t in inputs[2]]:
        torch.testing.assert_close(fast(*other), eager(m, *other), atol=1e-5, rtol=1e-5)


def test_compile_dynamic_batch_one_program():
    m = seed_model().to(DEVICE)
    inputs = on_device(seed_inputs(16))
    fast = luminal.compile(m, inputs, dynamic_shapes=dlrm_dynamic_shapes())
    for batch in (16, 3, 100, 2048, 16):
        x = on_device(seed_inputs(batch, seed=batch))
        got = fast(*x)
        assert got.shape == (batch, 1)
        torch.testing.assert_close(got, eager(m, *x), atol=1e-5, rtol=1e-5)


def test_compile_dynamic_mlp_batch():
    m = mlp().to(DEVICE).eval()
    fast = luminal.compile(m, (on_device(torch.randn(4, 8)),), dynamic_shapes=({0: Dim("b", min=1, max=512)},))
    for b in (1, 4, 9, 512):
        x = on_device(torch.randn(b, 8))
        torch.testing.assert_close(fast(x), eager(m, x))


def test_outputs_fresh_by_default_and_reuse_refuses_to_overwrite():
    m = mlp().to(DEVICE).eval()
    x, y = on_device(torch.randn(3, 8)), on_device(torch.randn(3, 8))
    fresh = luminal.compile(m, (x,))
    a, b = fresh(x), fresh(y)
    assert a.data_ptr() != b.data_ptr()
    torch.testing.assert_close(a, eager(m, x))  # the next call left it alone
    torch.testing.assert_close(b, eager(m, y))
    reuse = luminal.compile(m, (x,), outputs="reuse")
    a = reuse(x)
    with pytest.raises(luminal.OutputStillAlive, match=r"output 'output_0' of an earlier call is still alive"):
        reuse(y)
    torch.testing.assert_close(a, eager(m, x))  # refused: a is intact
    row = a[1]  # a view keeps the memory in use too
    del a
    with pytest.raises(luminal.OutputStillAlive):
        reuse(y)
    del row
    b = reuse(y)
    torch.testing.assert_close(b, eager(m, y))
    del b
    torch.testing.assert_close(reuse(x), eager(m, x))  # a dropped result frees the memory
    with pytest.raises(ValueError, match=r"outputs='later'"):
        luminal.compile(m, (x,), outputs="later")


@pytest.mark.parametrize("device", [None, "reference"])
def test_inputs_are_read_at_every_call(device):
    # CUDA and CPU programs read the caller's tensors in place (the reference copies them): a
    # tensor changed in place behind the same pointer, an unaligned view and a transposed one must
    # all be read as they are at the call.
    m = mlp().to(DEVICE).eval()
    x = on_device(torch.randn(3, 8))
    fast = luminal.compile(m, (x,)) if device is None else luminal.compile(m, (x,), device=device)
    a = fast(x)
    x.mul_(-2.0)  # same pointer, new values
    b = fast(x)
    torch.testing.assert_close(a, eager(m, x / -2.0))
    torch.testing.assert_close(b, eager(m, x))
    assert not torch.equal(a, b)
    view = on_device(torch.randn(4, 8))[1:]  # contiguous, 32 bytes into its storage
    torch.testing.assert_close(fast(view), eager(m, view))
    transposed = on_device(torch.randn(8, 3)).t()  # not contiguous
    torch.testing.assert_close(fast(transposed), eager(m, transposed))
    torch.testing.assert_close(fast(x), eager(m, x))  # back to the first tensor


def test_bf16_precision_runs_a_bfloat16_copy_behind_float32_io():
    m = mlp().to(DEVICE).eval()
    x = on_device(torch.randn(6, 8))
    fast = luminal.compile(m, (x,), precision="bf16")
    got = fast(x)
    assert got.dtype == torch.float32
    with torch.no_grad():
        want = copy.deepcopy(m).to(torch.bfloat16)(x.to(torch.bfloat16)).float()
    torch.testing.assert_close(got, want, atol=1e-2, rtol=1e-2)
    torch.testing.assert_close(got, eager(m, x), atol=3e-2, rtol=3e-2)  # near fp32, not equal
    assert m[0].weight.dtype == torch.float32  # the user's model is untouched


def test_dlrm_net_results_survive_the_next_call():
    # The issue's held-back check: a = m(x1); b = m(x2) must leave a holding x1's result.
    m = seed_model().to(DEVICE)
    x1, x2 = on_device(seed_inputs(64, seed=1)), on_device(seed_inputs(64, seed=2))
    fast = luminal.compile(m, x1, dynamic_shapes=dlrm_dynamic_shapes())
    a = fast(*x1)
    b = fast(*x2)
    with torch.no_grad():
        torch.testing.assert_close(a, m(*x1), atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(b, m(*x2), atol=1e-5, rtol=1e-5)
    assert not torch.equal(a, b)
    x1[2][0].copy_(x1[2][0].flip(0))  # table 0's indices changed in place: the bags are read again
    x1[0].mul_(0.5)
    with torch.no_grad():
        torch.testing.assert_close(fast(*x1), m(*x1), atol=1e-5, rtol=1e-5)


def test_output_structure_follows_the_model():
    class Multi(torch.nn.Module):
        def forward(self, x, pair):
            return {"sum": x + pair[0], "both": (x * pair[1], pair[0] - 1.0)}

    x, p = on_device(torch.randn(2, 3)), on_device([torch.randn(2, 3), torch.randn(2, 3)])
    fast = luminal.compile(Multi(), (x, p))
    got, want = fast(x, p), Multi()(x, p)
    assert set(got) == {"sum", "both"} and isinstance(got["both"], tuple)
    torch.testing.assert_close(got, want)


def test_stats_counts_kernels_and_plan_steps():
    fast = luminal.compile(mlp().to(DEVICE), (on_device(torch.randn(5, 8)),))
    s = fast.stats()
    assert s["device"] == DEVICE
    assert s["steps"] == len(s["plan"])
    if DEVICE == "cuda":
        assert s["kernels"] >= 1 and s["steps"] >= 1
    assert all(isinstance(step, str) for step in s["plan"])


SEED_RULE = "dlrm: bottom 13-8-4, 3 sum tables x 4, top 10-8-1, batch 64 -> "


def test_compile_dlrm_rule_finds_the_megakernel():
    # The DLRM rule recognizes the unmodified DLRM_Net; on CUDA it runs the megakernel (one
    # kernel); the CPU backend has neither fused kernel, so the search times the graph against
    # their decompositions (any may win); the reference keeps the translated graph and says what
    # else was offered.
    m = seed_model().to(DEVICE)
    inputs = on_device(seed_inputs(64))
    s = luminal.compile(m, inputs).stats()
    if DEVICE == "cuda":
        assert len(s["rules"]) == 1 and s["rules"][0].startswith(SEED_RULE + "mega") and s["kernels"] == 1, s
    else:
        assert len(s["rules"]) == 1 and s["rules"][0].startswith(SEED_RULE), s
        assert all(a in s["rules"][0] for a in ("mega", "fused_sparse", "decomposed")), s
        ref = luminal.compile(m, inputs, device="reference").stats()
        assert ref["rules"] == [SEED_RULE + "decomposed (offered: mega, fused_sparse)"], ref


@pytest.mark.parametrize("alternative", ["mega", "fused_sparse", "none"])
def test_compile_dlrm_every_alternative_equals_eager(alternative):
    m = seed_model().to(DEVICE)
    inputs = on_device(seed_inputs(64))
    nnz = {"dense_x": None, "lS_o": None, "lS_i": [{0: Dim(f"nnz{k}", min=2, max=1 << 20)} for k in range(3)]}
    fast = luminal.compile(m, inputs, dynamic_shapes=nnz, alternative=alternative)
    want = "decomposed" if alternative == "none" else alternative
    assert fast.stats()["rules"][0].startswith(SEED_RULE + want), fast.stats()["rules"]
    torch.testing.assert_close(fast(*inputs), eager(m, *inputs), atol=1e-5, rtol=1e-5)
    other = on_device(seed_inputs(64, seed=5))  # other bags (other nnz): one kernel, nnz read per call
    torch.testing.assert_close(fast(*other), eager(m, *other), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("alternative", ["fused_sparse", "none"])
def test_compile_dlrm_bf16_matches_the_rule_and_equals_eager_bf16(alternative):
    # precision='bf16' exports a bfloat16 copy (bf16 weights, tables and matmuls, f32 in and out):
    # the rule finds the same DLRM in it and offers the fused sparse path in bf16 (the megakernel
    # is fp32 only and says so).
    m = seed_model().to(DEVICE)
    inputs = on_device(seed_inputs(64))
    fast = luminal.compile(m, inputs, precision="bf16", alternative=alternative)
    (line,) = fast.stats()["rules"]
    want = "decomposed" if alternative == "none" else alternative
    assert line.startswith("dlrm: bf16 " + SEED_RULE[len("dlrm: "):] + want), line
    if alternative == "fused_sparse":  # unnamed, the report says why the megakernel is out
        (line,) = luminal.compile(m, inputs, precision="bf16").stats()["rules"]
        assert "mega: runs fp32 only, not bf16" in line, line
    m16 = copy.deepcopy(m).to(torch.bfloat16)
    g = torch.Generator().manual_seed(5)  # other values and rows in the same bags (the same nnz)
    other = (torch.rand(64, 13, generator=g), inputs[1].cpu(),
             [torch.randint(0, n, i.shape, generator=g) for n, i in zip((10, 20, 30), inputs[2])])
    for x in (inputs, on_device(other)):
        got = fast(*x)
        with torch.no_grad():
            ref = m16(x[0].to(torch.bfloat16), *x[1:]).float()
        assert got.dtype == torch.float32 and got.std() > 0
        torch.testing.assert_close(got, ref, atol=1e-2, rtol=1e-2)


@pytest.mark.parametrize("alternative", ["mega", "fused_sparse"])
def test_compile_dlrm_dynamic_batch_takes_the_rules_kernels(alternative):
    # A symbolic batch (torch.export's symbol) is kept: the kernels read the batch at run time, so
    # one program runs the megakernel / fused sparse path at every batch.
    m = seed_model().to(DEVICE)
    inputs = on_device(seed_inputs(16))
    fast = luminal.compile(m, inputs, dynamic_shapes=dlrm_dynamic_shapes(), alternative=alternative)
    (line,) = fast.stats()["rules"]
    assert re.fullmatch(r"dlrm: bottom 13-8-4, 3 sum tables x 4, top 10-8-1, batch [a-z]\w* -> "
                        + alternative, line), line
    torch.testing.assert_close(fast(*inputs), eager(m, *inputs), atol=1e-5, rtol=1e-5)
    for batch in (2, 37, 300):
        x = on_device(seed_inputs(batch, seed=batch))
        torch.testing.assert_close(fast(*x), eager(m, *x), atol=1e-5, rtol=1e-5)


def test_load_saved_pt2(tmp_path):
    m = seed_model().to(DEVICE)
    inputs = on_device(seed_inputs(32))
    path = tmp_path / "dlrm.pt2"
    torch.export.save(torch.export.export(m, inputs, dynamic_shapes=dlrm_dynamic_shapes()), str(path))
    fast = luminal.load(path, device=DEVICE)
    assert fast.path == str(path)
    torch.testing.assert_close(fast(*inputs), eager(m, *inputs), atol=1e-5, rtol=1e-5)
    x = on_device(seed_inputs(7, seed=3))  # the archive's symbols: any batch
    torch.testing.assert_close(fast(*x), eager(m, *x), atol=1e-5, rtol=1e-5)
    with pytest.raises(TypeError, match=r"args\[2\] is a tuple of 3, the program takes a list of 3"):
        fast(x[0], x[1], tuple(x[2]))


def test_program_json_without_serialize_keywords_pickles_no_weights(monkeypatch):
    """torch 2.11's serialize has no serialize_state_dict=: the fallback must give the same JSON
    without pickling the weights (seconds for GBs of tables) and leave the program whole."""
    import torch._export.serde.serialize as serde
    import luminal.aot as aot

    m = seed_model()
    ep = torch.export.export(m, seed_inputs(16))
    expected = aot._program_json(ep)
    pickled = []
    pickler = serde.serialize_torch_artifact
    monkeypatch.setattr(serde, "serialize_torch_artifact", lambda *a, **k: pickled.append(1) or pickler(*a, **k))
    assert aot._program_json_unpickled(ep) == expected
    assert pickled == []
    assert serde.serialize_torch_artifact is not pickler  # the spy is back in place
    assert set(ep.state_dict) == {n for n, _ in m.named_parameters()}


# ---- torch.compile(backend=luminal.backend) ----

def test_backend_mlp_equals_eager(backend_calls):
    be, seen = backend_calls
    m = mlp().to(DEVICE).eval()
    fast = torch.compile(m, backend=be)
    x = on_device(torch.randn(5, 8))
    torch.testing.assert_close(fast(x), eager(m, x))
    torch.testing.assert_close(fast(x * 2), eager(m, x * 2))
    assert seen == {"graphs": 1, "programs": 1}


def test_backend_dlrm_nested_inputs(backend_calls):
    be, _ = backend_calls
    m = seed_model().to(DEVICE)
    inputs = on_device(seed_inputs(64))
    fast = torch.compile(m, backend=be)
    torch.testing.assert_close(fast(*inputs), eager(m, *inputs), atol=1e-5, rtol=1e-5)


def test_backend_dlrm_rule(backend_calls):
    # Through torch.compile the parameters stay graph inputs; the rule still finds the model.
    be, _ = backend_calls
    m = seed_model().to(DEVICE)
    inputs = on_device(seed_inputs(64))
    fast = torch.compile(m, backend=be, options={"alternative": "mega"})
    torch.testing.assert_close(fast(*inputs), eager(m, *inputs), atol=1e-5, rtol=1e-5)
    (module,) = be.modules
    assert module.stats()["rules"] == [SEED_RULE + "mega"], module.stats()


def test_backend_bakes_small_index_buffers(backend_calls):
    # examples/dlrm's DLRM keeps li / lj as module buffers, which dynamo passes as graph inputs;
    # the backend holds them as program constants so the rule can read them, and recompiles when
    # they change in place (here into a model that is no DLRM: no rule, still equal to eager).
    import export as ex

    be, seen = backend_calls
    cfg = ex.DlrmConfig(4, [10, 20, 30], [13, 8, 4], [10, 8, 1], 32, 2, 0)
    m = ex.DLRM(cfg).to(DEVICE).eval()
    inputs = on_device(ex.make_inputs(cfg))
    fast = torch.compile(m, backend=be, options={"alternative": "mega"})
    torch.testing.assert_close(fast(*inputs), eager(m, *inputs), atol=1e-5, rtol=1e-5)
    assert be.modules[0].stats()["rules"] == [
        "dlrm: bottom 13-8-4, 3 sum tables x 4, top 10-8-1, batch 32 -> mega"], be.modules[0].stats()
    with torch.no_grad():
        m.lj.copy_(m.lj.flip(0))
    torch.testing.assert_close(fast(*inputs), eager(m, *inputs), atol=1e-5, rtol=1e-5)
    assert seen["programs"] == 2, seen
    assert not any(r.startswith("dlrm") for r in be.modules[1].stats()["rules"]), be.modules[1].stats()


def test_backend_dynamic_batch_is_one_program(backend_calls):
    be, seen = backend_calls
    m = mlp().to(DEVICE).eval()
    fast = torch.compile(m, backend=be, dynamic=True)
    for b in (3, 5, 17, 64):
        x = on_device(torch.randn(b, 8))
        torch.testing.assert_close(fast(x), eager(m, x))
    assert seen == {"graphs": 1, "programs": 1}, seen  # SymInt dims became graph symbols


def test_backend_automatic_dynamic_dlrm(backend_calls):
    # Without dynamic=True, dynamo recompiles once with the dims that changed marked dynamic;
    # that second graph must serve every later batch.
    be, seen = backend_calls
    m = seed_model().to(DEVICE)
    fast = torch.compile(m, backend=be)
    for batch in (8, 12, 33, 100, 2048):
        x = on_device(seed_inputs(batch, seed=batch))
        torch.testing.assert_close(fast(*x), eager(m, *x), atol=1e-5, rtol=1e-5)
    assert seen["graphs"] == 2 and seen["programs"] == 2, seen


def test_backend_fresh_outputs_survive_the_next_call(backend_calls):
    be, _ = backend_calls
    m = mlp().to(DEVICE).eval()
    fast = torch.compile(m, backend=be)
    x, y = on_device(torch.randn(4, 8)), on_device(torch.randn(4, 8))
    a = fast(x)
    b = fast(y)
    torch.testing.assert_close(a, eager(m, x))  # eager semantics: a was not overwritten
    torch.testing.assert_close(b, eager(m, y))


def test_branch_options_compile_and_are_checked():
    m = mlp().to(DEVICE).eval()
    x = on_device(torch.randn(4, 8))
    # CUDA backend options (the host backends take and ignore them): captured over two streams,
    # the longest chain at the highest priority.
    fast = luminal.compile(m, (x,), graph_branches=2, branch_priorities=True)
    torch.testing.assert_close(fast(x), eager(m, x))
    with pytest.raises(Exception, match=r"branch_priorities.*True or False"):
        luminal.compile(m, (x,), branch_priorities="yes")


def test_backend_options(backend_calls):
    be, _ = backend_calls
    m = mlp().to(DEVICE).eval()
    x = on_device(torch.randn(4, 8))
    fast = torch.compile(m, backend=be, options={"outputs": "reuse"})
    torch.testing.assert_close(fast(x), eager(m, x))
    fresh_dynamo()
    with pytest.raises(Exception, match=r"unknown option 'mode'"):
        torch.compile(m, backend=be, options={"mode": "max"})(x)
