#!/usr/bin/env python3
"""Exports a DLRM (facebookresearch/dlrm DLRM_Net, dot interaction) for luminal-cpp.

Writes OUT/weights.safetensors (state_dict names: emb_l.{k}.weight, bot_l.{2i}.weight/bias,
top_l.{2i}.weight/bias) and OUT/inputs.safetensors (dense_x F32 [B, n_dense], indices_{k} [B*bag],
offsets_{k} I32 [B] (uniform bags), expected F32 [B, 1] = PyTorch eager fp32 output).

    python examples/dlrm/export.py --m-spa 4 --ln-emb 10-20-30 --ln-bot 13-8-4 --ln-top 10-8-1 \
        --batch 2048 --bag 1 --seed 0 --out /tmp/dlrm
"""
import argparse
import dataclasses
import math
import os

import numpy as np
import torch
from safetensors.torch import save_file


@dataclasses.dataclass
class DlrmConfig:
    m_spa: int
    ln_emb: list
    ln_bot: list
    ln_top: list
    batch: int
    bag: int = 1
    seed: int = 0
    index_dtype: str = "int32"

    def validate(self):
        if self.ln_bot[-1] != self.m_spa:
            raise ValueError(f"ln_bot ends with {self.ln_bot[-1]}, m_spa is {self.m_spa}")
        n = len(self.ln_emb) + 1
        want = self.m_spa + n * (n - 1) // 2
        if self.ln_top[0] != want:
            raise ValueError(f"ln_top[0] is {self.ln_top[0]}, dot interaction gives {want}")
        if self.ln_top[-1] != 1:
            raise ValueError("ln_top must end with 1")


def _mlp(widths, sigmoid_last):
    layers = []
    for i in range(len(widths) - 1):
        m, n = widths[i], widths[i + 1]
        lin = torch.nn.Linear(m, n, bias=True)
        # The dlrm repo's init: normal with std sqrt(2 / (m + n)) for weights, sqrt(1 / n) for bias.
        lin.weight.data.normal_(0.0, math.sqrt(2.0 / (m + n)))
        lin.bias.data.normal_(0.0, math.sqrt(1.0 / n))
        layers.append(lin)
        last = i == len(widths) - 2
        layers.append(torch.nn.Sigmoid() if (last and sigmoid_last) else torch.nn.ReLU())
    return torch.nn.Sequential(*layers)


class DLRM(torch.nn.Module):
    """DLRM_Net with dot interaction (no self-interaction), sum embedding bags."""

    def __init__(self, cfg: DlrmConfig):
        super().__init__()
        self.bot_l = _mlp(cfg.ln_bot, sigmoid_last=False)
        self.top_l = _mlp(cfg.ln_top, sigmoid_last=True)
        self.emb_l = torch.nn.ModuleList()
        for v in cfg.ln_emb:
            e = torch.nn.EmbeddingBag(v, cfg.m_spa, mode="sum")
            bound = math.sqrt(1.0 / v)
            e.weight.data.uniform_(-bound, bound)
            self.emb_l.append(e)
        n = len(cfg.ln_emb) + 1
        li, lj = zip(*[(i, j) for i in range(n) for j in range(i)])
        self.register_buffer("li", torch.tensor(li), persistent=False)
        self.register_buffer("lj", torch.tensor(lj), persistent=False)

    def forward(self, dense_x, indices, offsets):
        x = self.bot_l(dense_x)
        ly = [emb(idx, off) for emb, idx, off in zip(self.emb_l, indices, offsets)]
        t = torch.cat([x] + ly, dim=1).view(x.shape[0], -1, x.shape[1])
        z = torch.bmm(t, t.transpose(1, 2))
        zflat = z[:, self.li, self.lj]
        return self.top_l(torch.cat([x, zflat], dim=1))


def build_model(cfg: DlrmConfig) -> DLRM:
    cfg.validate()
    torch.manual_seed(cfg.seed)
    return DLRM(cfg).eval()


def make_inputs(cfg: DlrmConfig, device="cpu"):
    """Deterministic inputs: dense_x, per-table indices (int64 for PyTorch) and uniform offsets."""
    g = torch.Generator().manual_seed(cfg.seed + 1)
    dense_x = torch.rand(cfg.batch, cfg.ln_bot[0], generator=g)
    indices = [torch.randint(0, v, (cfg.batch * cfg.bag,), generator=g) for v in cfg.ln_emb]
    offsets = [torch.arange(cfg.batch) * cfg.bag for _ in cfg.ln_emb]
    return (dense_x.to(device), [i.to(device) for i in indices], [o.to(device) for o in offsets])


def export(cfg: DlrmConfig, out: str):
    model = build_model(cfg)
    dense_x, indices, offsets = make_inputs(cfg)
    with torch.no_grad():
        expected = model(dense_x, indices, offsets)
        ref64 = model.double()(dense_x.double(), indices, offsets)
        model.float()
    os.makedirs(out, exist_ok=True)
    save_file({k: v.contiguous() for k, v in model.state_dict().items()},
              os.path.join(out, "weights.safetensors"))
    idt = torch.int32 if cfg.index_dtype == "int32" else torch.int64
    tensors = {"dense_x": dense_x, "expected": expected.float()}
    for k, (idx, off) in enumerate(zip(indices, offsets)):
        tensors[f"indices_{k}"] = idx.to(idt)
        tensors[f"offsets_{k}"] = off.to(torch.int32)
    save_file(tensors, os.path.join(out, "inputs.safetensors"))
    noise = (expected.double() - ref64).abs().max().item()
    print(f"[export] {out}: batch {cfg.batch} bag {cfg.bag} tables {cfg.ln_emb} bot {cfg.ln_bot} "
          f"top {cfg.ln_top}; fp32 vs fp64 max abs {noise:.2e}; "
          f"output range [{expected.min().item():.4f}, {expected.max().item():.4f}]")


def _dims(s):
    return [int(v) for v in s.split("-")]


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--m-spa", type=int, required=True)
    p.add_argument("--ln-emb", type=_dims, required=True)
    p.add_argument("--ln-bot", type=_dims, required=True)
    p.add_argument("--ln-top", type=_dims, required=True)
    p.add_argument("--batch", type=int, default=2048)
    p.add_argument("--bag", type=int, default=1)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--index-dtype", choices=["int32", "int64"], default="int32")
    p.add_argument("--out", required=True)
    a = p.parse_args()
    cfg = DlrmConfig(a.m_spa, a.ln_emb, a.ln_bot, a.ln_top, a.batch, a.bag, a.seed, a.index_dtype)
    try:
        cfg.validate()
    except ValueError as e:
        p.error(str(e))
    export(cfg, a.out)


if __name__ == "__main__":
    main()
