"""The generated CUDA call path of CompiledModule, driven with CPU tensors and a stand-in for the
C++ program that records every call (runs without a GPU): unchanged inputs cost no call but
run(), changed pointers/shapes/layouts rebind exactly what changed, output tensors are picked per
shape, bad inputs raise before anything is bound, and no reference cycle keeps a module alive."""
import gc
import weakref

import pytest
import torch
import torch.utils._pytree as pytree

from luminal.compiled import CompiledModule, OutputStillAlive


class StandInProgram:
    """luminal._luminal.Program's surface: x [s0, 8] f32 and idx [3] i64 -> out [s0, 4] f32."""

    inputs = [("x", "f32", ["s0", 8]), ("idx", "i64", [3])]
    outputs = [("output_0", "f32", ["s0", 4])]
    device = "cuda"

    def __init__(self):
        self.calls = []
        self.bound = {}

    def set_input_device(self, i, ptr, nbytes, shape):
        self.calls.append(("in", i))
        self.bound[i] = (ptr, nbytes, tuple(shape))

    def bind(self):
        self.calls.append(("bind",))
        return [[self.bound[0][2][0], 4]]

    def set_output_device(self, j, ptr, nbytes):
        self.calls.append(("out", j, ptr, nbytes))

    def run(self, stream=0):
        self.calls.append(("run", stream))

    def take(self):
        calls, self.calls = self.calls, []
        return calls


def module(outputs="reuse"):
    args = (torch.zeros(5, 8), {"idx": torch.zeros(3, dtype=torch.int64)})
    flat, in_spec = pytree.tree_flatten((args, {}))
    out_spec = pytree.tree_flatten(torch.zeros(1))[1]
    prog = StandInProgram()
    m = CompiledModule(prog, in_spec, [None] * len(flat), out_spec, outputs=outputs, _tensor_device="cpu")
    m._scope["stream"] = lambda device: 77  # torch's current-stream query needs a GPU
    return m, prog


def test_unchanged_inputs_cost_only_run():
    m, prog = module()
    x, idx = torch.randn(5, 8), torch.arange(3)
    out = m(x, {"idx": idx})
    assert out.shape == (5, 4)
    calls = prog.take()
    assert calls[:2] == [("in", 0), ("in", 1)] and ("bind",) in calls and calls[-1] == ("run", 77)
    own = m._out[0][0]  # reuse: the plan writes the module's tensor; calls return views of it
    assert ("out", 0, own.data_ptr(), 5 * 4 * 4) in calls
    assert out is not own and out.data_ptr() == own.data_ptr()
    del out
    for _ in range(3):
        m(x, {"idx": idx})  # each result dropped at once
    assert prog.take() == [("run", 77)] * 3
    x.copy_(torch.randn(5, 8))  # new values behind the same pointer: nothing to rebind
    m(x, {"idx": idx})
    assert prog.take() == [("run", 77)]


def test_new_pointer_rebinds_that_input_only():
    m, prog = module()
    x, idx = torch.randn(5, 8), torch.arange(3)
    m(x, {"idx": idx})
    prog.take()
    m(x.clone(), {"idx": idx})
    assert prog.take() == [("in", 0), ("run", 77)]  # same shape: no bind, same outputs


def test_new_shape_picks_the_output_set_of_that_shape():
    m, prog = module()
    idx = torch.arange(3)
    a = m(torch.randn(5, 8), {"idx": idx})
    a_ptr = a.data_ptr()
    prog.take()
    b = m(torch.randn(7, 8), {"idx": idx})  # another output set: a may stay alive
    calls = prog.take()
    assert b.shape == (7, 4) and ("bind",) in calls and ("out", 0, b.data_ptr(), 7 * 16) in calls
    del a
    c = m(torch.randn(5, 8), {"idx": idx})
    assert c.data_ptr() == a_ptr  # the batch-5 tensors again, rebound, not reallocated
    assert ("out", 0, a_ptr, 5 * 16) in prog.take()


def test_layout_and_dtype_changes_behind_the_same_pointer():
    m, prog = module()
    sq = torch.randn(8, 8)
    idx = torch.arange(3)
    m(sq, {"idx": idx})
    prog.take()
    m(sq.t(), {"idx": idx})  # same pointer and shape, transposed: bound as a contiguous copy
    assert prog.take()[0] == ("in", 0)
    assert prog.bound[0][0] != sq.data_ptr()
    with pytest.raises(TypeError, match=r"input 'x' is torch\.int32, the program takes torch\.float32"):
        m(sq.view(torch.int32), {"idx": idx})
    assert prog.take() == []  # refused before anything was bound or run


def test_bad_inputs_raise_naming_the_input():
    m, prog = module()
    idx = torch.arange(3)
    with pytest.raises(TypeError, match=r"input 'x' is list"):
        m([[1.0] * 8], {"idx": idx})
    with pytest.raises(ValueError, match=r"input 'x' has shape \[5, 9\], the program takes \['s0', 8\] "
                                         r"\(dim 1 must be 8\)"):
        m(torch.randn(5, 9), {"idx": idx})
    with pytest.raises(TypeError, match=r"args\[1\] lacks key 'idx'"):
        m(torch.randn(5, 8), {"index": idx})
    with pytest.raises(TypeError, match=r"args is a tuple of 1, the program takes a tuple of 2"):
        m(torch.randn(5, 8))
    with pytest.raises(ValueError, match=r"input 'x' is on meta, the program runs on cpu"):
        m(torch.empty(5, 8, device="meta"), {"idx": idx})
    assert [c for c in prog.take() if c[0] == "run"] == []


def test_reuse_refuses_to_overwrite_a_live_result():
    m, prog = module()
    x, idx = torch.randn(5, 8), torch.arange(3)
    a = m(x, {"idx": idx})
    prog.take()
    with pytest.raises(OutputStillAlive, match=r"output 'output_0' of an earlier call is still alive"):
        m(x, {"idx": idx})
    assert prog.take() == []  # refused before running
    part = a[1:3]
    del a
    with pytest.raises(OutputStillAlive):
        m(x, {"idx": idx})
    del part
    m(x, {"idx": idx})
    assert prog.take() == [("run", 77)]


def test_fresh_outputs_are_new_tensors():
    m, prog = module(outputs="fresh")
    x, idx = torch.randn(5, 8), torch.arange(3)
    a, b = m(x, {"idx": idx}), m(x, {"idx": idx})
    assert a is not b and a.data_ptr() != b.data_ptr()
    assert [c for c in prog.take() if c[0] == "out"] == [("out", 0, m._out[0][0].data_ptr(), 80)]


def test_positional_call_checks_pointers_and_dynamic_shapes_only():
    # What luminal.backend runs per call: dynamo's placeholders by position, its guards trusted
    # for dtypes, static sizes and layouts.
    m, prog = module()
    call = m.positional_call([1, 3])
    x, idx = torch.randn(5, 8), torch.arange(3)
    out = call("param", x, None, idx)
    assert out.shape == (5, 4)
    calls = prog.take()
    assert calls[:2] == [("in", 0), ("in", 1)] and calls[-1] == ("run", 77)
    del out
    call("param", x, None, idx)
    assert prog.take() == [("run", 77)]  # unchanged: four reads, one run
    call("param", x.clone(), None, idx)
    assert prog.take() == [("in", 0), ("run", 77)]  # a new pointer rebinds that input only
    wide = torch.randn(9, 8)
    assert call("param", wide, None, idx).shape == (9, 4)  # x's dim 0 is dynamic: checked
    calls = prog.take()
    assert calls[0] == ("in", 0) and ("bind",) in calls


def test_flat_calls_and_counts():
    m, prog = module()
    x, idx = torch.randn(5, 8), torch.arange(3)
    assert m.run_flat([x, idx]).shape == (5, 4)
    with pytest.raises(TypeError, match=r"1 tensor inputs given, the program takes 2 \(x, idx\)"):
        m.run_flat([x])


def test_no_reference_cycle_keeps_a_module_alive():
    m, _ = module()
    m(torch.randn(5, 8), {"idx": torch.arange(3)})
    ref = weakref.ref(m)
    gc.disable()
    try:
        del m
        assert ref() is None  # freed by reference counting alone: its device memory goes at once
    finally:
        gc.enable()
