"""ATen translator: split.Tensor, split_with_sizes, chunk, unbind, unflatten against eager."""
import pytest
import torch

from aten_check import check, exported_ops, on_device


@pytest.mark.parametrize("decompose", [False, True])
def test_split_forms(decompose):
    torch.manual_seed(0)
    x = torch.randn(4, 10, 3)

    def f(x):
        a, b, c = x.split(4, dim=1)  # 4, 4, 2
        d, e = x.split([3, 7], dim=-2)
        return a[:, 0] + b[:, 2] + c[:, 1] + d[:, 0] + e[:, -1]

    if not decompose:
        assert {"aten.split.Tensor", "aten.split_with_sizes.default"} <= exported_ops(f, x)
    check(f, x, decompose=decompose)


def test_chunk_unbind_unflatten():
    torch.manual_seed(1)
    x = torch.randn(2, 7, 6)

    def f(x):
        p = torch.ops.aten.chunk(x, 3, 1)  # 3, 3, 1
        u = torch.ops.aten.unbind(x, 2)
        y = torch.ops.aten.unflatten(x, -1, [2, -1])
        return p[0] * 2 + p[1], p[2], u[0] - u[5], y.transpose(2, 3)

    assert {"aten.chunk.default", "aten.unbind.int", "aten.unflatten.int"} <= exported_ops(f, x)
    check(f, x)


def test_split_of_symbolic_dim():
    torch.manual_seed(2)
    x = torch.randn(5, 12)
    batch = torch.export.Dim("batch", min=2, max=64)
    compiled = check(lambda x: [t * (i + 1) for i, t in enumerate(x.split(5, dim=1))], x, dynamic_shapes=({0: batch},))
    y = on_device(torch.randn(9, 12))
    torch.testing.assert_close(compiled(y), [t * (i + 1) for i, t in enumerate(y.split(5, dim=1))])
