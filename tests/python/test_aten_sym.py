"""ATen translator, symbolic ints (ops_sym.cpp): sym_size / sym_numel / sym_stride and the Python
operators torch.export records on SymInts and SymBools, checked at several sizes."""
import json
import os
import tempfile
import zipfile

import pytest
import torch

import luminal
from aten_check import Fn
from aten_more import check_at, dyn, seq


def test_size_arithmetic():
    def f(x, y):
        n, m = x.shape
        k = y.shape[0]
        return (torch.zeros(n * 2 + 1), torch.ones(m // 2 + 2, n % 3 + 2), torch.zeros(max(n, k) + min(n, m)),
                torch.arange(n * m + k), x.new_ones(n // 2 + 2), torch.zeros((n + k) % 4 + 2), torch.zeros(n - 1 + m))

    x, y = torch.randn(4, 6), torch.randn(5)
    check_at(f, x, y, more=[(torch.randn(7, 3), torch.randn(2)), (torch.randn(2, 9), torch.randn(11))],
             dynamic_shapes=dyn({0: seq("n"), 1: seq("m")}, {0: seq("k")}), atol=0, rtol=0)


def test_tensors_mixed_with_sizes():
    # x * x.shape[0] and friends: the SymInt becomes a tensor computed from the sizes.
    def f(x):
        n, m = x.shape
        return x * n + m, x / (n * m), x - x.numel(), (x > 0).long() * (n // 2), x + (n == m), x * (n - 2 * m)

    check_at(f, torch.randn(3, 4), more=[(torch.randn(5, 5),), (torch.randn(8, 2),)],
             dynamic_shapes=dyn({0: seq("n"), 1: seq("m")}))


def test_sym_bools():
    def f(x, y):
        n, k = x.shape[0], y.shape[0]
        # Each SymBool meets a tensor directly (a SymBool * int would be evaluated at export time).
        return x + (n < k), x * (n >= k), x + (n != k), x + (n <= k), x * (n > k), x + (n == k)

    check_at(f, torch.randn(3), torch.randn(5),
             more=[(torch.randn(5), torch.randn(5)), (torch.randn(9), torch.randn(4))],
             dynamic_shapes=dyn({0: seq("n")}, {0: seq("k")}))


def test_sym_size_numel_stride():
    def f(x):
        t = x.transpose(0, 1)
        return torch.zeros(t.stride(0) + 1), torch.zeros(x.numel()), torch.arange(t.size(1)), torch.zeros(x.size(-1))

    check_at(f, torch.randn(3, 4), more=[(torch.randn(6, 4),)], dynamic_shapes=dyn({0: seq("n")}), atol=0, rtol=0)


def _export_and_edit(fn, inputs, edit, dynamic_shapes=None):
    """Exports fn, rewrites the archive's model JSON with edit(program_dict), loads it."""
    ep = torch.export.export(Fn(fn), inputs, dynamic_shapes=dynamic_shapes)
    with tempfile.TemporaryDirectory() as tmp:
        src, dst = os.path.join(tmp, "a.pt2"), os.path.join(tmp, "b.pt2")
        torch.export.save(ep, src)
        with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
            for item in zin.infolist():
                data = zin.read(item.filename)
                if item.filename.endswith(".json") and "/models/" in item.filename:
                    j = json.loads(data)
                    edit(j)
                    data = json.dumps(j).encode()
                zout.writestr(item, data)
        return luminal.load(dst)


def _nodes(j):
    return j["graph_module"]["graph"]["nodes"]


def test_tensor_metadata_mismatch_is_refused():
    def edit(j):
        for n in _nodes(j):
            if n["target"].endswith("_assert_tensor_metadata.default"):
                for a in n["inputs"]:
                    if a["name"] == "dtype":
                        a["arg"] = {"as_scalar_type": 5}  # serde's LONG (torch.int64)

    with pytest.raises(ValueError, match=r"_assert_tensor_metadata.*tensor is f32, the program asserts i64"):
        _export_and_edit(lambda x: x.to(torch.float64), (torch.randn(3),), edit)


def _insert_node(target, inputs):
    """An edit that puts a node with no outputs first in the graph."""
    def edit(j):
        node = {"target": target, "inputs": [{"name": k, "arg": v, "kind": 1} for k, v in inputs.items()],
                "outputs": [], "metadata": {}, "name": "inserted"}
        _nodes(j).insert(0, node)
    return edit


def test_false_assertion_is_refused():
    # torch.export records _assert_scalar for unbacked sizes (x.item()); here its condition is the
    # constant False, which the translator must reject instead of dropping.
    edit = _insert_node("torch.ops.aten._assert_scalar.default",
                        {"self": {"as_bool": False}, "assert_msg": {"as_string": "u0 >= 0"}})
    with pytest.raises(ValueError, match=r"_assert_scalar.*assertion fails: u0 >= 0"):
        _export_and_edit(lambda x: x + 1, (torch.randn(3),), edit)


def test_constrain_range_violation_is_refused():
    edit = _insert_node("torch.ops.aten.sym_constrain_range_for_size.default",
                        {"size": {"as_int": 5}, "min": {"as_int": 6}, "max": {"as_none": True}})
    with pytest.raises(ValueError, match=r"sym_constrain_range_for_size.*value 5 is outside \[6, inf\]"):
        _export_and_edit(lambda x: x + 1, (torch.randn(3),), edit)


def test_constrain_range_and_true_assertion_pass():
    edit = _insert_node("torch.ops.aten._assert_scalar.default",
                        {"self": {"as_bool": True}, "assert_msg": {"as_string": "ok"}})
    c = _export_and_edit(lambda x: x + 1, (torch.randn(3),), edit)
    x = torch.randn(3)
    torch.testing.assert_close(c(x), x + 1)


def test_symbolic_float_is_refused():
    def edit(j):
        for n in _nodes(j):
            if n["target"] == "_operator.mul":
                n["inputs"][1]["arg"] = {"as_float": 0.5}

    with pytest.raises(ValueError, match=r"_operator\.mul.*argument 'b' must be an int or SymInt"):
        _export_and_edit(lambda x: torch.zeros(x.shape[0] * 2), (torch.randn(3),), edit,
                         dynamic_shapes=dyn({0: seq("b")}))
