"""A DLRM_Net in the style of facebookresearch/dlrm (dlrm_s_pytorch.py), written for the tests:
ModuleList of EmbeddingBag(mode="sum"), Sequential MLPs built by create_mlp, the dot interaction
with bmm and Z[:, li, lj], offsets as one [tables, batch] tensor, indices as a list of tensors."""
import numpy as np
import torch
import torch.nn as nn


class DLRM_Net(nn.Module):
    def create_mlp(self, ln, sigmoid_layer):
        layers = nn.ModuleList()
        for i in range(0, ln.size - 1):
            n, m = int(ln[i]), int(ln[i + 1])
            LL = nn.Linear(n, m, bias=True)
            # facebookresearch's initialization: normal with the fan-in/fan-out scale.
            std_dev = np.sqrt(2 / (m + n))
            LL.weight.data = torch.tensor(np.random.normal(0.0, std_dev, size=(m, n)).astype(np.float32))
            LL.bias.data = torch.tensor(np.random.normal(0.0, np.sqrt(1 / m), size=m).astype(np.float32))
            layers.append(LL)
            layers.append(nn.Sigmoid() if i == sigmoid_layer else nn.ReLU())
        return torch.nn.Sequential(*layers)

    def create_emb(self, m, ln):
        emb_l = nn.ModuleList()
        for i in range(0, ln.size):
            n = int(ln[i])
            EE = nn.EmbeddingBag(n, m, mode="sum", sparse=True)
            W = np.random.uniform(low=-np.sqrt(1 / n), high=np.sqrt(1 / n), size=(n, m)).astype(np.float32)
            EE.weight.data = torch.tensor(W, requires_grad=True)
            emb_l.append(EE)
        return emb_l

    def __init__(self, m_spa, ln_emb, ln_bot, ln_top, arch_interaction_itself=False, sigmoid_top=-1):
        super().__init__()
        self.arch_interaction_itself = arch_interaction_itself
        self.emb_l = self.create_emb(m_spa, ln_emb)
        self.bot_l = self.create_mlp(ln_bot, -1)
        self.top_l = self.create_mlp(ln_top, sigmoid_top if sigmoid_top >= 0 else ln_top.size - 2)

    def apply_mlp(self, x, layers):
        return layers(x)

    def apply_emb(self, lS_o, lS_i, emb_l):
        ly = []
        for k, sparse_index_group_batch in enumerate(lS_i):
            sparse_offset_group_batch = lS_o[k]
            E = emb_l[k]
            V = E(sparse_index_group_batch, sparse_offset_group_batch, per_sample_weights=None)
            ly.append(V)
        return ly

    def interact_features(self, x, ly):
        (batch_size, d) = x.shape
        T = torch.cat([x] + ly, dim=1).view((batch_size, -1, d))
        Z = torch.bmm(T, torch.transpose(T, 1, 2))
        _, ni, nj = Z.shape
        offset = 1 if self.arch_interaction_itself else 0
        li = torch.tensor([i for i in range(ni) for j in range(i + offset)])
        lj = torch.tensor([j for i in range(nj) for j in range(i + offset)])
        Zflat = Z[:, li, lj]
        R = torch.cat([x] + [Zflat], dim=1)
        return R

    def forward(self, dense_x, lS_o, lS_i):
        x = self.apply_mlp(dense_x, self.bot_l)
        ly = self.apply_emb(lS_o, lS_i, self.emb_l)
        z = self.interact_features(x, ly)
        p = self.apply_mlp(z, self.top_l)
        return p


def seed_model(seed=0):
    """The seed shape of dlrm_s_pytorch.py's defaults: 3 tables of 4-dim embeddings."""
    np.random.seed(seed)
    torch.manual_seed(seed)
    ln_emb = np.array([10, 20, 30])
    ln_bot = np.array([13, 8, 4])
    num_fea = len(ln_emb) + 1  # the bottom MLP's output and one vector per table
    ln_top = np.array([4 + num_fea * (num_fea - 1) // 2, 8, 1])
    return DLRM_Net(4, ln_emb, ln_bot, ln_top).eval()


def seed_inputs(batch, bag=2, seed=1, ln_emb=(10, 20, 30)):
    """dense_x [batch, 13], lS_o [tables, batch] (bag starts), lS_i a list of index tensors."""
    g = torch.Generator().manual_seed(seed)
    dense_x = torch.rand(batch, 13, generator=g)
    lengths = [torch.randint(0, bag + 1, (batch,), generator=g) for _ in ln_emb]
    for n in lengths:  # empty bags stay possible, but every table has >= 2 indices (export's dims)
        n[0] = max(2, bag)
    lS_o = torch.stack([torch.cumsum(n, 0) - n for n in lengths])
    lS_i = [torch.randint(0, rows, (int(n.sum()),), generator=g) for rows, n in zip(ln_emb, lengths)]
    return dense_x, lS_o, lS_i
