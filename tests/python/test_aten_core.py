"""ATen translator: the core families (linear, shape, embedding, index, arithmetic) against eager."""
import pytest
import torch

from aten_check import check, exported_ops, refused


def test_linear_relu_mlp():
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4), torch.nn.Sigmoid())
    check(m, torch.randn(5, 8))


@pytest.mark.parametrize("op", ["mm", "bmm", "matmul", "addmm"])
def test_matrix_products(op):
    torch.manual_seed(1)
    a, b = torch.randn(3, 4, 5), torch.randn(3, 5, 2)
    fns = {
        "mm": (lambda x, y: torch.mm(x[0], y[0]), (a, b)),
        "bmm": (torch.bmm, (a, b)),
        "matmul": (torch.matmul, (a, b[0])),
        "addmm": (lambda c, x, y: torch.addmm(c, x, y, beta=0.5, alpha=2.0), (torch.randn(2), a[0], b[0])),
    }
    fn, inputs = fns[op]
    check(fn, *inputs)


def test_views_and_joins():
    torch.manual_seed(2)
    x = torch.randn(2, 3, 4)

    def f(x):
        a = x.view(6, 4).t().reshape(4, 3, 2).permute(2, 0, 1)  # [2, 4, 3]
        b = x.transpose(1, 2).unsqueeze(0).squeeze(0)  # [2, 4, 3]
        c = torch.cat([a, b], dim=2)[:, 1:, ::2]  # [2, 3, 3]
        d = torch.stack([c, c * 2.0], dim=1).flatten(1, 2)  # [2, 6, 3]
        return d.select(1, 3) + x[:, :, 1].narrow(1, 0, 3) + x.expand(3, 2, 3, 4)[2, :, :, 0]

    check(f, x)


def test_cat_promotes_mixed_dtypes():
    # torch.cat of bf16 and f32 parts is f32 (torchrec's bf16 dense features beside its f32 bags).
    torch.manual_seed(7)
    x, y = torch.randn(3, 4).to(torch.bfloat16), torch.randn(3, 2)
    check(lambda a, b: torch.cat([a, b], dim=1) * 2.0, x, y)


def test_embedding_and_bags():
    torch.manual_seed(3)
    emb = torch.nn.Embedding(10, 4)
    bag_sum = torch.nn.EmbeddingBag(10, 4, mode="sum")
    bag_mean = torch.nn.EmbeddingBag(10, 4, mode="mean")

    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.emb, self.s, self.m = emb, bag_sum, bag_mean

        def forward(self, i2, idx, off):
            return self.emb(i2).sum(1) + self.s(idx, off) + self.m(idx, off) + self.s(i2)

    idx = torch.tensor([1, 2, 9, 0, 3, 3, 5], dtype=torch.int64)
    off = torch.tensor([0, 2, 2, 5], dtype=torch.int64)  # bag 1 is empty
    check(M(), torch.randint(0, 10, (4, 3)), idx, off)


@pytest.mark.parametrize("decompose", [False, True])
@pytest.mark.parametrize("value", [0.0, -1.5])
def test_constant_pad_and_crop(value, decompose):
    # F.pad exports as aten.pad (or constant_pad_nd once decomposed); negative amounts crop.
    torch.manual_seed(5)
    x = torch.randn(2, 3, 5)
    fn = lambda x: (torch.nn.functional.pad(x, (1, 2), value=value),  # noqa: E731
                    torch.nn.functional.pad(x, (0, 3, 2, 0), value=value),
                    torch.constant_pad_nd(x, (-1, 2, 1, -1), value))
    assert exported_ops(fn, x, decompose=decompose) & {"aten.pad.default", "aten.constant_pad_nd.default"}
    check(fn, x, decompose=decompose)


def test_index_tensor_with_leading_slice():
    torch.manual_seed(4)
    li, lj = torch.tril_indices(4, 4, offset=-1)

    def f(z, li, lj):
        return z[:, li, lj]

    check(f, torch.randn(3, 4, 4), li, lj)


def test_arithmetic_promotion():
    x, i = torch.randn(3, 4), torch.arange(12).reshape(3, 4)
    check(lambda x, i: (x + i) * 2 - i / 4 + torch.rsub(x, 1.5, alpha=2) - torch.sub(x, i, alpha=3), x, i)


def test_unsupported_op_names_the_op():
    refused(lambda x: torch.cumprod(x, 0), torch.randn(3), match=r"aten\.cumprod")


def test_wrong_dtype_and_shape_at_call():
    m = torch.nn.Linear(4, 2)
    x = torch.randn(3, 4)
    c = check(m, x)
    with pytest.raises(TypeError, match=r"input 'input' is torch.float64, the program takes torch.float32"):
        c(x.double())
    with pytest.raises(ValueError, match=r"dim 1 must be 4"):
        c(torch.randn(3, 5))
