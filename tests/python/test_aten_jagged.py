"""Values read from data (aten.item) in plain PyTorch, no torchrec: the per-key split of jagged values that
KeyedJaggedTensor.to_dict does (sizes from lengths.view(K, B).sum(1).tolist()), feeding embedding_bag with
include_last_offset offsets from a cumsum, against eager; the batch and the values' length dynamic; and an
item() used as a size, refused by name."""
import pytest
import torch

from aten_check import check, refused

ROWS = (7, 11, 5)


class JaggedBags(torch.nn.Module):
    """torchrec's EmbeddingBagCollection.forward in plain PyTorch: per-key pieces of the flat values."""

    def __init__(self, mode):
        super().__init__()
        self.tables = torch.nn.ParameterList([torch.nn.Parameter(torch.randn(r, 4)) for r in ROWS])
        self.mode = mode

    def forward(self, values, lengths):
        per_key = lengths.view(len(ROWS), -1)
        pieces = values.split(per_key.sum(1).tolist())
        offsets = torch.cat([per_key.new_zeros(len(ROWS), 1), per_key.cumsum(1)], 1)
        bags = [torch.nn.functional.embedding_bag(p, t, o, mode=self.mode, include_last_offset=True)
                for p, t, o in zip(pieces, self.tables, offsets.unbind(0))]
        return torch.cat(bags, 1) * 2.0


def jagged_inputs(batch, seed):
    g = torch.Generator().manual_seed(seed)
    lengths = torch.randint(0, 4, (len(ROWS), batch), generator=g)
    lengths[:, 0] = 0  # sample 0's bags empty
    values = torch.cat([torch.randint(0, r, (int(n.sum()),), generator=g) for r, n in zip(ROWS, lengths)])
    return values, lengths.flatten()


@pytest.mark.parametrize("mode", ["sum", "mean"])
def test_per_key_split_feeding_bags_matches_eager(mode):
    torch.manual_seed(0)
    m = JaggedBags(mode)
    b, nnz = torch.export.Dim("b", min=2, max=512), torch.export.Dim("nnz", min=1, max=1 << 16)
    compiled = check(m, *jagged_inputs(6, 1), dynamic_shapes=({0: nnz}, {0: len(ROWS) * b}))
    for batch, seed in ((9, 2), (3, 3)):  # other batches and lengths, one program
        values, lengths = jagged_inputs(batch, seed)
        torch.testing.assert_close(compiled(values, lengths), m(values, lengths), atol=1e-5, rtol=1e-5)


class WeightedJaggedBags(torch.nn.Module):
    """A weighted EmbeddingBagCollection in plain PyTorch: per-key pieces of the values and of their weights."""

    def __init__(self):
        super().__init__()
        self.tables = torch.nn.ParameterList([torch.nn.Parameter(torch.randn(r, 4)) for r in ROWS])

    def forward(self, values, weights, lengths):
        per_key = lengths.view(len(ROWS), -1)
        sizes = per_key.sum(1).tolist()
        offsets = torch.cat([per_key.new_zeros(len(ROWS), 1), per_key.cumsum(1)], 1)
        bags = [torch.nn.functional.embedding_bag(p, t, o, mode="sum", include_last_offset=True, per_sample_weights=w)
                for p, w, t, o in zip(values.split(sizes), weights.split(sizes), self.tables, offsets.unbind(0))]
        return torch.cat(bags, 1)


def test_weighted_per_key_split_matches_eager():
    torch.manual_seed(0)
    m = WeightedJaggedBags()

    def inputs(batch, seed):
        values, lengths = jagged_inputs(batch, seed)
        return values, torch.rand(values.numel(), generator=torch.Generator().manual_seed(seed)) * 4 - 2, lengths

    b, nnz = torch.export.Dim("b", min=2, max=512), torch.export.Dim("nnz", min=1, max=1 << 16)
    compiled = check(m, *inputs(6, 1), dynamic_shapes=({0: nnz}, {0: nnz}, {0: len(ROWS) * b}))
    for batch, seed in ((9, 2), (3, 3)):
        x = inputs(batch, seed)
        torch.testing.assert_close(compiled(*x), m(*x), atol=1e-5, rtol=1e-5)


def test_weighted_bags_of_plain_offsets():
    table = torch.randn(10, 3)
    idx, off = torch.tensor([1, 4, 4, 9]), torch.tensor([0, 1])
    w = torch.tensor([0.5, -1.0, 2.0, 3.0])
    check(lambda i, o, w: torch.nn.functional.embedding_bag(i, table, o, mode="sum", per_sample_weights=w), idx, off, w)


def first_n(x, n):
    k = n.sum().item()
    torch._check_is_size(k)
    torch._check(k <= x.shape[0])
    return x[:k] * 2.0


def test_a_value_read_from_data_as_a_size_is_refused():
    refused(first_n, torch.randn(5), torch.tensor([2, 1]), match="depends on 'u0', a value read from data")
