#!/usr/bin/env python3
"""Exports a DLRM-v2 (MLPerf's DLRM-DCNv2: torchrec DLRM_DCN) in plain PyTorch for luminal-cpp.

Writes OUT/weights.safetensors (fp32, torchrec's state_dict names: dense_arch.model._mlp.{i}._linear.*,
sparse_arch.embedding_bag_collection.embedding_bags.t_cat_{k}.weight, inter_arch.crossnet.{V_kernels,
W_kernels,bias}.{l}, over_arch.model.0._mlp.{i}._linear.*, over_arch.model.1.*) and OUT/inputs.safetensors:
dense_features F32 [B, 13], per feature key cat_k values_cat_k (1-D) and lengths_cat_k [B] (the
KeyedJaggedTensor layout, I32 or I64), expected F32 [B, 1] = the fp32 logit (no sigmoid, as in torchrec).

    python examples/dlrm/export_v2.py --preset dlrm-v2-small --batch 16 --out /tmp/dlrm_v2_small
    python examples/dlrm/export_v2.py --preset dlrm-v2 --max-rows 100000 --batch 2048 --out /tmp/dlrm_v2

Math (torchrec/modules/crossnet.py LowRankCrossNet): x0 = [dense_out, pooled_0, ..., pooled_{F-1}],
x_{l+1} = x0 * (W_l (V_l x_l) + b_l) + x_l; logit = over_arch(x_L).
"""
import argparse
import copy
import dataclasses
import json
import math
import os
import shutil
import sys
import time

import numpy as np
import torch
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_stream as sst  # noqa: E402

# MLPerf DLRM-v2 (Criteo 1TB multi-hot, max-ind-range 40M): rows and multi-hot sizes per table, as in
# mlcommons/training recommendation_v2/torchrec_dlrm (--num_embeddings_per_feature, --multi_hot_sizes).
MLPERF_ROWS = [40000000, 39060, 17295, 7424, 20265, 3, 7122, 1543, 63, 40000000, 3067956, 405282, 10, 2209,
               11938, 155, 4, 976, 14, 40000000, 40000000, 40000000, 590152, 12973, 108, 36]
MLPERF_HOTS = [3, 2, 1, 2, 6, 1, 1, 1, 1, 7, 3, 8, 1, 6, 9, 5, 1, 1, 1, 12, 100, 27, 10, 3, 1, 1]

PRESETS = {
    "dlrm-v2": dict(dim=128, ln_bot=[13, 512, 256, 128], ln_top=[1024, 1024, 512, 256], cross_layers=3,
                    cross_rank=512, rows=MLPERF_ROWS, hots=MLPERF_HOTS),
    "dlrm-v2-small": dict(dim=16, ln_bot=[13, 64, 16], ln_top=[32, 16], cross_layers=2, cross_rank=8,
                          rows=[1000] * 4, hots=MLPERF_HOTS[:4]),
}


@dataclasses.dataclass
class V2Config:
    """Model and input shape. ln_bot includes the dense input width; ln_top is the over-arch MLP only
    (torchrec's over_arch_layer_sizes without its final 1: the logit Linear is always appended)."""
    dim: int
    ln_bot: list
    ln_top: list
    cross_layers: int
    cross_rank: int
    rows: list
    hots: list
    batch: int = 16
    seed: int = 0
    index_dtype: str = "int32"
    bag_dist: str = "fixed"  # fixed: hots[k] rows per bag; random: uniform in [0, 2 * hots[k]]
    full_rows: list = None   # table sizes before --max-rows (None: not capped)

    def validate(self):
        """Raises ValueError naming the inconsistent field."""
        if self.ln_bot[-1] != self.dim:
            raise ValueError(f"ln_bot ends with {self.ln_bot[-1]}, dim is {self.dim}")
        if len(self.rows) != len(self.hots) or not self.rows:
            raise ValueError(f"{len(self.rows)} tables in rows, {len(self.hots)} in hots")
        if min(self.rows) <= 0 or min(self.hots) < 0 or self.batch <= 0 or not self.ln_top:
            raise ValueError("rows and batch must be positive, hots >= 0, ln_top non-empty")
        if self.cross_rank < 1 or self.cross_layers < 0:
            raise ValueError(f"cross_rank {self.cross_rank} must be >= 1, cross_layers >= 0")
        if self.index_dtype not in ("int32", "int64") or self.bag_dist not in ("fixed", "random"):
            raise ValueError(f"index_dtype {self.index_dtype!r} / bag_dist {self.bag_dist!r} unknown")

    def keys(self):
        """The feature keys cat_0 .. cat_{F-1} (torchrec's criteo DEFAULT_CAT_NAMES)."""
        return [f"cat_{k}" for k in range(len(self.rows))]


def from_preset(name, max_rows=None, **kw):
    """A V2Config of a named preset, fields in kw overriding; max_rows caps every table."""
    p = dict(PRESETS[name])
    p.update({k: v for k, v in kw.items() if v is not None})
    full = list(p["rows"])
    p["rows"] = [min(v, max_rows) for v in full] if max_rows else full
    cfg = V2Config(full_rows=full if p["rows"] != full else None, **p)
    cfg.validate()
    return cfg


class Perceptron(nn.Module):
    """torchrec.modules.mlp.Perceptron: relu(_linear(x))."""

    def __init__(self, m, n):
        super().__init__()
        self._linear = nn.Linear(m, n)

    def forward(self, x):
        return torch.relu(self._linear(x))


class MLP(nn.Module):
    """torchrec.modules.mlp.MLP: Perceptrons in _mlp, ReLU after every layer including the last."""

    def __init__(self, in_size, layer_sizes):
        super().__init__()
        widths = [in_size] + list(layer_sizes)
        self._mlp = nn.Sequential(*[Perceptron(widths[i], widths[i + 1]) for i in range(len(layer_sizes))])

    def forward(self, x):
        return self._mlp(x)


class LowRankCrossNet(nn.Module):
    """x_{l+1} = x0 * (W_l (V_l x_l) + b_l) + x_l with V_l [rank, N], W_l [N, rank], b_l [N]."""

    def __init__(self, n, layers, rank):
        super().__init__()
        self.W_kernels = nn.ParameterList([nn.Parameter(torch.empty(n, rank)) for _ in range(layers)])
        self.V_kernels = nn.ParameterList([nn.Parameter(torch.empty(rank, n)) for _ in range(layers)])
        self.bias = nn.ParameterList([nn.Parameter(torch.empty(n)) for _ in range(layers)])

    def forward(self, x0):
        x = x0
        for v, w, b in zip(self.V_kernels, self.W_kernels, self.bias):
            x = x0 * (nn.functional.linear(nn.functional.linear(x, v), w) + b) + x
        return x


class SparseArch(nn.Module):
    """Sum-pooled embedding bags, table t_{key} per feature key; forward gives [B, F, D]."""

    def __init__(self, cfg, tables):
        super().__init__()
        self.keys = cfg.keys()
        self.embedding_bag_collection = nn.Module()
        self.embedding_bag_collection.embedding_bags = nn.ModuleDict(
            {f"t_{key}": nn.EmbeddingBag(t.shape[0], t.shape[1], mode="sum", _weight=t)
             for key, t in zip(self.keys, tables)})

    def forward(self, values, lengths):
        bags = self.embedding_bag_collection.embedding_bags
        out = []
        for key, v, n in zip(self.keys, values, lengths):
            n = n.long()
            out.append(bags[f"t_{key}"](v.long(), torch.cumsum(n, 0) - n))  # offsets = bag starts
        return torch.stack(out, dim=1)


class DLRMv2(nn.Module):
    """DLRM_DCN: dense_arch, sparse_arch, inter_arch (crossnet over the concat) and over_arch -> logit."""

    def __init__(self, cfg, tables):
        super().__init__()
        n = (len(cfg.rows) + 1) * cfg.dim
        self.dense_arch = nn.Module()
        self.dense_arch.model = MLP(cfg.ln_bot[0], cfg.ln_bot[1:])
        self.sparse_arch = SparseArch(cfg, tables)
        self.inter_arch = nn.Module()
        self.inter_arch.crossnet = LowRankCrossNet(n, cfg.cross_layers, cfg.cross_rank)
        self.over_arch = nn.Module()
        self.over_arch.model = nn.Sequential(MLP(n, cfg.ln_top), nn.Linear(cfg.ln_top[-1], 1))

    def head(self, dense_features, pooled):
        """The logit [B, 1] from the dense features and the pooled bags [B, F, D]."""
        x = self.dense_arch.model(dense_features)
        x0 = torch.cat([x.unsqueeze(1), pooled], dim=1).flatten(1)
        return self.over_arch.model(self.inter_arch.crossnet(x0))

    def forward(self, dense_features, values, lengths):
        return self.head(dense_features, self.sparse_arch(values, lengths))


def make_table(cfg, k):
    """Table k: uniform(-sqrt(1/rows), sqrt(1/rows)) fp32 (torchrec's EmbeddingBagConfig default init),
    from its own generator so tables do not depend on each other."""
    v = cfg.rows[k]
    bound = np.float32(math.sqrt(1.0 / v))
    a = np.random.Generator(np.random.PCG64([cfg.seed, 1, k])).random((v, cfg.dim), dtype=np.float32)
    a *= 2 * bound  # in place: a 40M-row table is never held twice
    a -= bound
    return torch.from_numpy(a)


def init_dense(model, seed):
    """The dense parts' init (MLPs, cross layers), in place: the dlrm repo's normal init for every Linear
    (nn.Linear's default leaves the logit's spread over a batch ~1e-3, too flat to tell a wrong input path from
    a right one), torchrec's xavier for the crossnet, small nonzero crossnet biases (torchrec zeroes them;
    nonzero keeps the bias add checked)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.Linear):
                a, b = m.in_features, m.out_features
                m.weight.normal_(0.0, math.sqrt(2.0 / (a + b)), generator=g)
                m.bias.normal_(0.0, math.sqrt(1.0 / b), generator=g)
        cn = model.inter_arch.crossnet
        for v, w, b in zip(cn.V_kernels, cn.W_kernels, cn.bias):
            nn.init.xavier_normal_(v, generator=g)
            nn.init.xavier_normal_(w, generator=g)
            b.uniform_(-1 / math.sqrt(b.numel()), 1 / math.sqrt(b.numel()), generator=g)


def build_model(cfg):
    """The whole fp32 model in memory, deterministic in cfg.seed; state_dict() keys are torchrec's."""
    cfg.validate()
    model = DLRMv2(cfg, [make_table(cfg, k) for k in range(len(cfg.rows))])
    init_dense(model, cfg.seed)
    return model.eval()


def make_inputs(cfg):
    """(dense_features [B, n_dense] f32, values per key, lengths per key [B]) in cfg.index_dtype."""
    g = torch.Generator().manual_seed(cfg.seed + 1)
    idt = torch.int32 if cfg.index_dtype == "int32" else torch.int64
    dense = torch.rand(cfg.batch, cfg.ln_bot[0], generator=g)
    values, lengths = [], []
    for v, hot in zip(cfg.rows, cfg.hots):
        if cfg.bag_dist == "fixed":
            n = torch.full((cfg.batch,), hot, dtype=torch.long)
        else:
            n = torch.randint(0, 2 * hot + 1, (cfg.batch,), generator=g)
        values.append(torch.randint(0, v, (int(n.sum()),), generator=g).to(idt))
        lengths.append(n.to(idt))
    return dense, values, lengths


def forward_fp64(model, inputs):
    """The same forward in float64: only the table rows the inputs touch are gathered and upcast."""
    dense, values, lengths = inputs
    bags = model.sparse_arch.embedding_bag_collection.embedding_bags
    pooled = []
    for key, v, n in zip(model.sparse_arch.keys, values, lengths):
        uniq, inv = torch.unique(v.long(), return_inverse=True)
        rows = bags[f"t_{key}"].weight[uniq].double()
        n = n.long()
        pooled.append(nn.functional.embedding_bag(inv, rows, torch.cumsum(n, 0) - n, mode="sum"))
    head = copy.copy(model)  # shares the fp32 tables; only the small dense parts are copied to fp64
    head._modules = {k: copy.deepcopy(m).double() for k, m in model._modules.items() if k != "sparse_arch"}
    return head.head(dense.double(), torch.stack(pooled, dim=1))


def weight_bytes(cfg):
    """fp32 bytes of the weights file (tables + dense parts)."""
    n = (len(cfg.rows) + 1) * cfg.dim
    widths_bot, widths_top = cfg.ln_bot, [n] + cfg.ln_top + [1]
    mlp = sum((a + 1) * b for ws in (widths_bot, widths_top) for a, b in zip(ws, ws[1:]))
    return 4 * (sum(cfg.rows) * cfg.dim + mlp + cfg.cross_layers * (2 * n * cfg.cross_rank + n))


def free_resources(out):
    """(free disk bytes at out, available RAM bytes)."""
    d = out
    while not os.path.exists(d):
        d = os.path.dirname(os.path.abspath(d))
    ram = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    try:
        with open("/proc/meminfo") as f:
            ram = next(int(l.split()[1]) * 1024 for l in f if l.startswith("MemAvailable:"))
    except (OSError, StopIteration):
        pass
    return shutil.disk_usage(d).free, ram


def check_fits(cfg, out):
    """Raises ValueError with the sizes when the weights exceed free disk or available RAM (the model
    is built in memory, then streamed to disk)."""
    need = weight_bytes(cfg)
    disk, ram = free_resources(out)
    if need > min(disk, ram):
        hint = "" if cfg.full_rows else " (tables not capped)"
        raise ValueError(f"[export_v2] the weights need {need / 1e9:.1f} GB{hint} in RAM and on disk: "
                         f"{ram / 1e9:.1f} GB RAM available, {disk / 1e9:.1f} GB free at {out}; "
                         "pass --max-rows N to cap every table")


def export(cfg, out, progress=print):
    """Builds the model, writes OUT/weights.safetensors and OUT/inputs.safetensors; returns
    (expected, fp32-vs-fp64 max abs)."""
    cfg.validate()
    check_fits(cfg, out)
    t0 = time.perf_counter()
    os.makedirs(out, exist_ok=True)
    if cfg.full_rows:
        progress(f"[export_v2] tables capped at {max(cfg.rows)} rows (--max-rows): NOT the full model "
                 f"({sum(cfg.full_rows) * cfg.dim * 4 / 1e9:.1f} GB of tables uncapped)")
    model = build_model(cfg)
    meta = {"model": "dlrm_dcn", "config": json.dumps(dataclasses.asdict(cfg))}
    progress(f"[export_v2] writing {weight_bytes(cfg) / 1e9:.2f} GB of weights to {out}")
    entries = {k: sst.Entry.of(t.contiguous()) for k, t in model.state_dict().items()}
    sst.write_file(os.path.join(out, "weights.safetensors"), entries, meta, progress)
    inputs = make_inputs(cfg)
    with torch.no_grad():
        expected = model(*inputs)
        noise = (expected.double() - forward_fp64(model, inputs)).abs().max().item()
    dense, values, lengths = inputs
    tensors = {"dense_features": dense, "expected": expected}
    for key, v, n in zip(cfg.keys(), values, lengths):
        tensors[f"values_{key}"], tensors[f"lengths_{key}"] = v, n
    sst.save_small(tensors, os.path.join(out, "inputs.safetensors"), {"feature_keys": ",".join(cfg.keys())})
    progress(f"[export_v2] {out}: batch {cfg.batch} bags {cfg.bag_dist} hots {_short(cfg.hots)} tables "
             f"{_short(cfg.rows)} x d={cfg.dim} bot {cfg.ln_bot} top {cfg.ln_top}+[1] cross {cfg.cross_layers}"
             f"x rank {cfg.cross_rank}; fp32 vs fp64 max abs {noise:.2e}; logit range "
             f"[{expected.min().item():.4f}, {expected.max().item():.4f}]; {time.perf_counter() - t0:.1f} s")
    return expected, noise


def _short(xs):
    return xs if len(xs) <= 8 else f"[{xs[0]}, {xs[1]}, ... {len(xs)} tables, {sum(xs)} total]"


def _dims(s):
    return [int(v) for v in s.split("-")]


def parse_args(argv=None):
    """The CLI: a preset, every dim overridable."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--preset", choices=sorted(PRESETS), default="dlrm-v2-small")
    p.add_argument("--max-rows", type=int, help="cap every table at N rows")
    p.add_argument("--dim", type=int, help="embedding dim (= the last --ln-bot width)")
    p.add_argument("--ln-bot", type=_dims, help="dense arch widths incl. the input, e.g. 13-512-256-128")
    p.add_argument("--ln-top", type=_dims, help="over arch MLP widths; a Linear to 1 is appended")
    p.add_argument("--cross-layers", type=int)
    p.add_argument("--cross-rank", type=int)
    p.add_argument("--rows", type=_dims, help="rows per table, dash-separated")
    p.add_argument("--hots", type=_dims, help="multi-hot size per table, dash-separated")
    p.add_argument("--batch", type=int, default=2048)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--index-dtype", choices=["int32", "int64"], default="int32")
    p.add_argument("--bag-dist", choices=["fixed", "random"], default="fixed")
    p.add_argument("--out", required=True)
    return p, p.parse_args(argv)


def main(argv=None):
    p, a = parse_args(argv)
    try:
        cfg = from_preset(a.preset, a.max_rows, dim=a.dim, ln_bot=a.ln_bot, ln_top=a.ln_top,
                          cross_layers=a.cross_layers, cross_rank=a.cross_rank, rows=a.rows, hots=a.hots,
                          batch=a.batch, seed=a.seed, index_dtype=a.index_dtype, bag_dist=a.bag_dist)
        export(cfg, a.out)
    except ValueError as e:
        p.error(str(e))  # usage + message on stderr, exit 2


if __name__ == "__main__":
    main()
