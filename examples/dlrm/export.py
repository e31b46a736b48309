#!/usr/bin/env python3
"""Exports a DLRM (facebookresearch/dlrm DLRM_Net, dot interaction) for luminal-cpp.

Writes OUT/weights.safetensors (or, with --shard-gb, a Hugging Face style
OUT/model.safetensors.index.json + shards) with state_dict names emb_l.{k}.weight,
bot_l.{2i}.weight/bias, top_l.{2i}.weight/bias, and OUT/inputs.safetensors: dense_x F32 [B, n_dense],
indices_{k} [nnz_k] (I32 or I64), offsets_{k} I32 [B] (bag starts), expected F32 [B, 1] = PyTorch eager
fp32 output (from the fp32 tables, or the bf16 tables upcast). Mean bags add the safetensors metadata
{"embedding_bag_mode": "mean"} to both files.

    python examples/dlrm/export.py --m-spa 4 --ln-emb 10-20-30 --ln-bot 13-8-4 --ln-top 10-8-1 \
        --batch 2048 --bag 1 --seed 0 --out /tmp/dlrm
    python examples/dlrm/export.py --preset kaggle --batch 2048 --dist powerlaw --out /tmp/kaggle
    python examples/dlrm/export.py --preset mlperf --max-rows 2000000 --table-dtype bf16 --out /tmp/mlperf

Tables are written in chunks straight from their generator (never the whole model in memory twice);
`expected` gathers only the rows the inputs touch, back from the written file (memory-mapped).
"""
import argparse
import collections
import concurrent.futures
import dataclasses
import math
import os
import shutil
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_stream as sst  # noqa: E402

# Criteo Kaggle (Display Advertising Challenge) and Criteo Terabyte (MLPerf training, max-ind-range 40M,
# i.e. MLPerf's tb00_40M) table sizes, as in facebookresearch/dlrm tools/visualize.py (data_set "kaggle"
# and "terabyte" with max_ind_range == 40000000; commit 4082656690e3) and bench/run_and_time.sh there.
KAGGLE_TABLES = [1460, 583, 10131227, 2202608, 305, 24, 12517, 633, 3, 93145, 5683, 8351593, 3194, 27,
                 14992, 5461306, 10, 5652, 2173, 4, 7046547, 18, 15, 286181, 105, 142572]
TERABYTE_40M_TABLES = [39884406, 39043, 17289, 7420, 20263, 3, 7120, 1543, 63, 38532951, 2953546, 403346,
                       10, 2208, 11938, 155, 4, 976, 14, 39979771, 25641295, 39664984, 585935, 12972, 108, 36]

PRESETS = {
    "seed": dict(m_spa=4, ln_emb=[10, 20, 30], ln_bot=[13, 8, 4], ln_top=[10, 8, 1], table_init="legacy"),
    "kaggle": dict(m_spa=16, ln_emb=KAGGLE_TABLES, ln_bot=[13, 512, 256, 64, 16], ln_top=[367, 512, 256, 1],
                   table_init="chunked"),
    "mlperf": dict(m_spa=128, ln_emb=TERABYTE_40M_TABLES, ln_bot=[13, 512, 256, 128],
                   ln_top=[479, 1024, 1024, 512, 256, 1], table_init="chunked"),
}
CHUNK_ROWS = 1 << 16  # rows per generator chunk of a "chunked" table: fixed, so values never depend on memory


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
    bag_dist: str = "fixed"      # fixed: every bag has `bag` rows; random: Poisson lengths (0 allowed)
    bag_means: list = None       # random bags: mean length per table (None: `bag` for every table)
    dist: str = "uniform"        # uniform or powerlaw (Zipf-like hot rows)
    alpha: float = 1.05          # power-law exponent: P(rank r) ~ r^-alpha
    table_dtype: str = "fp32"    # fp32 or bf16 (stored dtype of the tables)
    mode: str = "sum"            # EmbeddingBag mode: sum or mean
    table_init: str = "legacy"   # legacy: nn.EmbeddingBag init (the fixtures); chunked: streamed per chunk
    full_ln_emb: list = None     # table sizes before --max-rows (None: not capped)

    def validate(self):
        if self.ln_bot[-1] != self.m_spa:
            raise ValueError(f"ln_bot ends with {self.ln_bot[-1]}, m_spa is {self.m_spa}")
        n = len(self.ln_emb) + 1
        want = self.m_spa + n * (n - 1) // 2
        if self.ln_top[0] != want:
            raise ValueError(f"ln_top[0] is {self.ln_top[0]}, dot interaction gives {want}")
        if self.ln_top[-1] != 1:
            raise ValueError("ln_top must end with 1")
        checks = [("bag_dist", self.bag_dist, ["fixed", "random"]), ("dist", self.dist, ["uniform", "powerlaw"]),
                  ("table_dtype", self.table_dtype, ["fp32", "bf16"]), ("mode", self.mode, ["sum", "mean"]),
                  ("index_dtype", self.index_dtype, ["int32", "int64"]),
                  ("table_init", self.table_init, ["legacy", "chunked"])]
        for name, v, ok in checks:
            if v not in ok:
                raise ValueError(f"{name} must be one of {ok}, got {v!r}")
        if self.bag_means is not None and len(self.bag_means) != len(self.ln_emb):
            raise ValueError(f"bag_means has {len(self.bag_means)} entries for {len(self.ln_emb)} tables")
        if self.bag < 0 or self.batch <= 0 or self.alpha <= 0 or min(self.ln_emb) <= 0:
            raise ValueError("batch, table sizes and alpha must be positive, bag >= 0")

    def means(self):
        """Mean bag length per table."""
        return list(self.bag_means) if self.bag_means is not None else [self.bag] * len(self.ln_emb)


def from_preset(name, batch, max_rows=None, **kw):
    """A DlrmConfig of a named preset; max_rows caps every table (the uncapped sizes kept in full_ln_emb)."""
    p = dict(PRESETS[name])
    p.update(kw)
    full = list(p["ln_emb"])
    if max_rows:
        p["ln_emb"] = [min(v, max_rows) for v in full]
    cfg = DlrmConfig(batch=batch, full_ln_emb=full if p["ln_emb"] != full else None, **p)
    cfg.validate()
    return cfg


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
    """DLRM_Net with dot interaction (no self-interaction), sum or mean embedding bags: DLRM(bot_l, top_l,
    tables, mode), or DLRM(cfg) as before (tests/fixtures scripts use it)."""

    def __init__(self, bot_l, top_l=None, tables=None, mode="sum"):
        super().__init__()
        if isinstance(bot_l, DlrmConfig):  # the first API, DLRM(cfg): init from the global RNG as it did
            cfg = bot_l
            bot_l, top_l = _mlp(cfg.ln_bot, sigmoid_last=False), _mlp(cfg.ln_top, sigmoid_last=True)
            tables, mode = legacy_tables(cfg), cfg.mode
        self.bot_l, self.top_l = bot_l, top_l
        self.emb_l = torch.nn.ModuleList(
            [torch.nn.EmbeddingBag.from_pretrained(t, freeze=True, mode=mode) for t in tables])
        n = len(tables) + 1
        li, lj = zip(*[(i, j) for i in range(n) for j in range(i)])
        self.register_buffer("li", torch.tensor(li), persistent=False)
        self.register_buffer("lj", torch.tensor(lj), persistent=False)

    def interact_top(self, x, ly):
        """The dot interaction and the top MLP, from the bottom output and the pooled bags."""
        t = torch.cat([x] + ly, dim=1).view(x.shape[0], -1, x.shape[1])
        z = torch.bmm(t, t.transpose(1, 2))
        zflat = z[:, self.li, self.lj]
        return self.top_l(torch.cat([x, zflat], dim=1))

    def forward(self, dense_x, indices, offsets):
        x = self.bot_l(dense_x)
        ly = [emb(idx, off) for emb, idx, off in zip(self.emb_l, indices, offsets)]
        return self.interact_top(x, ly)


def build_mlps(cfg: DlrmConfig):
    """Seeds the global RNG with cfg.seed and builds (bot_l, top_l) in the dlrm repo's init."""
    cfg.validate()
    torch.manual_seed(cfg.seed)
    return _mlp(cfg.ln_bot, sigmoid_last=False), _mlp(cfg.ln_top, sigmoid_last=True)


def legacy_tables(cfg: DlrmConfig):
    """fp32 tables drawn from the global RNG right after build_mlps, exactly as the first export.py did
    (nn.EmbeddingBag init, then uniform(-sqrt(1/v), sqrt(1/v))): the committed fixtures depend on it."""
    out = []
    for v in cfg.ln_emb:
        e = torch.nn.EmbeddingBag(v, cfg.m_spa, mode="sum")
        bound = math.sqrt(1.0 / v)
        e.weight.data.uniform_(-bound, bound)
        out.append(e.weight.data)
    return out


def chunk_rows(cfg: DlrmConfig, k: int, c: int):
    """Rows [c*CHUNK_ROWS, ...) of table k in the chunked init: uniform(-sqrt(1/v), sqrt(1/v)) fp32 from
    a generator seeded by (seed, table, chunk), so any chunk can be made alone."""
    v = cfg.ln_emb[k]
    n = min(CHUNK_ROWS, v - c * CHUNK_ROWS)
    rng = np.random.Generator(np.random.PCG64([cfg.seed, k, c]))
    bound = np.float32(math.sqrt(1.0 / v))
    a = rng.random((n, cfg.m_spa), dtype=np.float32)
    a *= 2 * bound
    a -= bound
    return torch.from_numpy(a)


def build_model(cfg: DlrmConfig) -> DLRM:
    """The whole fp32 model in memory (small configs and tests; big ones go through load_model)."""
    bot, top = build_mlps(cfg)
    if cfg.table_init == "legacy":
        tables = legacy_tables(cfg)
    else:
        tables = [torch.cat([chunk_rows(cfg, k, c) for c in range(-(-v // CHUNK_ROWS))])
                  for k, v in enumerate(cfg.ln_emb)]
    if cfg.table_dtype == "bf16":
        tables = [t.to(torch.bfloat16).float() for t in tables]
    return DLRM(bot, top, tables, cfg.mode).eval()


def _table_chunks(cfg, k, legacy):
    """Yields table k's rows in the stored dtype, chunk by chunk; chunked tables are generated by a few
    threads (numpy releases the GIL while filling) with at most 2 x threads chunks in flight."""
    dt = torch.bfloat16 if cfg.table_dtype == "bf16" else torch.float32
    if legacy is not None:
        yield legacy[k].to(dt)
        return
    n = -(-cfg.ln_emb[k] // CHUNK_ROWS)
    workers = max(1, min(8, (os.cpu_count() or 1) - 1))
    with concurrent.futures.ThreadPoolExecutor(workers) as pool:
        pending = collections.deque()
        for c in range(n):
            pending.append(pool.submit(lambda c=c: chunk_rows(cfg, k, c).to(dt)))
            if len(pending) >= 2 * workers:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()


def write_weights(cfg: DlrmConfig, out: str, shard_gb: float = 0.0, progress=print):
    """Streams the weights to OUT (one file, or shards + index when shard_gb > 0). Returns the path the
    loaders take (the .safetensors file or the index JSON)."""
    bot, top = build_mlps(cfg)
    legacy = legacy_tables(cfg) if cfg.table_init == "legacy" else None
    entries = {}
    for prefix, mlp in (("bot_l", bot), ("top_l", top)):
        for name, t in mlp.state_dict().items():
            entries[f"{prefix}.{name}"] = sst.Entry.of(t.contiguous())
    tdt = "BF16" if cfg.table_dtype == "bf16" else "F32"
    for k, v in enumerate(cfg.ln_emb):
        entries[f"emb_l.{k}.weight"] = sst.Entry(tdt, [v, cfg.m_spa], lambda k=k: _table_chunks(cfg, k, legacy))
    meta = {"embedding_bag_mode": "mean"} if cfg.mode == "mean" else None
    os.makedirs(out, exist_ok=True)
    need, free = sum(e.nbytes() for e in entries.values()), shutil.disk_usage(out).free
    if need > free:
        raise ValueError(f"[export] {out}: the weights need {need / 1e9:.1f} GB, {free / 1e9:.1f} GB free "
                         "(use --max-rows or --table-dtype bf16)")
    progress(f"[export] writing {need / 1e9:.2f} GB of weights to {out}")
    if shard_gb > 0:
        return sst.write_sharded(entries, out, int(shard_gb * 2**30), meta, progress)
    path = os.path.join(out, "weights.safetensors")
    sst.write_file(path, entries, meta, progress)
    return path


def _powerlaw(v, n, alpha, g):
    """n Zipf-like row ids in [0, v): rank r in [1, v] with P ~ r^-alpha (inverse CDF of the continuous
    law), scattered over the table by a fixed bijection so the hot rows are not all at the front."""
    u = torch.rand(n, generator=g, dtype=torch.float64)
    if abs(alpha - 1.0) < 1e-9:
        x = torch.exp(u * math.log(v + 1.0))
    else:
        e = 1.0 - alpha
        x = (1.0 + u * ((v + 1.0) ** e - 1.0)) ** (1.0 / e)
    rank = x.floor().long().clamp_(1, v) - 1
    mult = _coprime(v)
    return (rank * mult + v // 3) % v  # a bijection of [0, v): rank 0 is not row 0


def _coprime(v):
    """A multiplier coprime to v near v * 0.618 (golden-ratio spread)."""
    m = max(1, int(v * 0.6180339887))
    while math.gcd(m, v) != 1:
        m += 1
    return m


def make_inputs(cfg: DlrmConfig, device="cpu"):
    """Deterministic inputs: dense_x, per-table indices (int64 for PyTorch) and offsets (bag starts).
    The defaults (fixed bags, uniform rows) draw exactly what the first export.py drew."""
    g = torch.Generator().manual_seed(cfg.seed + 1)
    dense_x = torch.rand(cfg.batch, cfg.ln_bot[0], generator=g)
    indices, offsets = [], []
    for v, mean in zip(cfg.ln_emb, cfg.means()):
        if cfg.bag_dist == "fixed":
            lengths = torch.full((cfg.batch,), int(mean), dtype=torch.long)
        else:
            lengths = torch.poisson(torch.full((cfg.batch,), float(mean)), generator=g).long()
        nnz = int(lengths.sum())
        if cfg.dist == "uniform":
            idx = torch.randint(0, v, (nnz,), generator=g)
        else:
            idx = _powerlaw(v, nnz, cfg.alpha, g)
        indices.append(idx)
        offsets.append(torch.cumsum(lengths, 0) - lengths)
    return (dense_x.to(device), [i.to(device) for i in indices], [o.to(device) for o in offsets])


def expected_output(cfg: DlrmConfig, weights_path: str, inputs, dtype=torch.float32):
    """PyTorch eager output (fp32, or fp64 for the noise check), gathering only the rows the inputs touch
    from the written weights (memory-mapped; bf16 tables upcast). Same rows in the same order as a full
    table, so the same sums."""
    bot, top = build_mlps(cfg)
    tables = sst.open_tables(weights_path, len(cfg.ln_emb))
    dense_x, indices, offsets = inputs
    model = DLRM(bot, top, [torch.zeros(1, cfg.m_spa)] * len(cfg.ln_emb), cfg.mode).eval().to(dtype)
    with torch.no_grad():
        x = model.bot_l(dense_x.to(dtype))
        ly = []
        for tab, idx, off in zip(tables, indices, offsets):
            uniq, inv = torch.unique(idx, return_inverse=True)
            rows = sst.rows_f32(tab, uniq.numpy()).to(dtype)
            ly.append(torch.nn.functional.embedding_bag(inv, rows, off, mode=cfg.mode))
        return model.interact_top(x, ly)


def write_inputs(cfg: DlrmConfig, weights_path: str, path: str):
    """Makes the inputs, computes `expected` from the written weights and saves PATH; returns
    (expected, fp32-vs-fp64 max abs)."""
    inputs = make_inputs(cfg)
    expected = expected_output(cfg, weights_path, inputs)
    noise = (expected.double() - expected_output(cfg, weights_path, inputs, torch.float64)).abs().max().item()
    dense_x, indices, offsets = inputs
    idt = torch.int32 if cfg.index_dtype == "int32" else torch.int64
    tensors = {"dense_x": dense_x, "expected": expected.float()}
    for k, (idx, off) in enumerate(zip(indices, offsets)):
        tensors[f"indices_{k}"] = idx.to(idt)
        tensors[f"offsets_{k}"] = off.to(torch.int32)
    meta = {"embedding_bag_mode": "mean"} if cfg.mode == "mean" else None
    sst.save_small(tensors, path, meta)
    return expected, noise


def export(cfg: DlrmConfig, out: str, shard_gb: float = 0.0, weights_path: str = None,
           inputs_name: str = "inputs.safetensors", progress=print):
    """Writes the weights (unless weights_path names ones already written for this config) and the
    inputs for cfg.batch. Returns (weights path, inputs path)."""
    cfg.validate()
    t0 = time.perf_counter()
    if cfg.full_ln_emb:
        full = sum(cfg.full_ln_emb) * cfg.m_spa * (2 if cfg.table_dtype == "bf16" else 4) / 1e9
        progress(f"[export] tables capped at {max(cfg.ln_emb)} rows (--max-rows): NOT the full model "
                 f"({full:.1f} GB of tables uncapped); the results describe the capped model")
    if weights_path is None:
        weights_path = write_weights(cfg, out, shard_gb, progress)
    inputs_path = os.path.join(out, inputs_name)
    expected, noise = write_inputs(cfg, weights_path, inputs_path)
    bags = f"random, means {_short(cfg.means())}" if cfg.bag_dist == "random" else cfg.bag
    progress(f"[export] {out}: batch {cfg.batch} bag {bags} "
             f"rows {cfg.dist} mode {cfg.mode} tables {_short(cfg.ln_emb)} x d={cfg.m_spa} {cfg.table_dtype} "
             f"bot {cfg.ln_bot} top {cfg.ln_top}; fp32 vs fp64 max abs {noise:.2e}; output range "
             f"[{expected.min().item():.4f}, {expected.max().item():.4f}]; {time.perf_counter() - t0:.1f} s")
    return weights_path, inputs_path


def _short(xs):
    return xs if len(xs) <= 8 else f"[{xs[0]}, {xs[1]}, ... {len(xs)} tables, {sum(xs)} rows]"


def _dims(s):
    return [int(v) for v in s.split("-")]


def parse_args(argv=None):
    """The CLI: explicit dims (the fixtures) or --preset; every option of DlrmConfig."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--preset", choices=sorted(PRESETS), help="named model shape (dims given explicitly win)")
    p.add_argument("--m-spa", type=int)
    p.add_argument("--ln-emb", type=_dims)
    p.add_argument("--ln-bot", type=_dims)
    p.add_argument("--ln-top", type=_dims)
    p.add_argument("--max-rows", type=int, help="cap every table at N rows (runs that cannot hold the model)")
    p.add_argument("--batch", type=int, default=2048)
    p.add_argument("--bag", type=int, default=1, help="rows per bag (fixed bags) or the mean (random bags)")
    p.add_argument("--bag-dist", choices=["fixed", "random"], default="fixed")
    p.add_argument("--bag-means", type=_dims, help="random bags: mean length per table, dash-separated")
    p.add_argument("--dist", choices=["uniform", "powerlaw"], default="uniform")
    p.add_argument("--alpha", type=float, default=1.05, help="power-law exponent")
    p.add_argument("--mean", action="store_true", help="EmbeddingBag mode mean (default sum)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--index-dtype", choices=["int32", "int64"], default="int32")
    p.add_argument("--table-dtype", choices=["fp32", "bf16"], default="fp32")
    p.add_argument("--table-init", choices=["legacy", "chunked"],
                   help="legacy: nn.EmbeddingBag init (default for explicit dims); chunked: streamed")
    p.add_argument("--shard-gb", type=float, default=0.0, help="write shards of this size + an index JSON")
    p.add_argument("--out", required=True)
    return p, p.parse_args(argv)


def config_from_args(a):
    """DlrmConfig from parsed CLI arguments; raises ValueError on an inconsistent shape."""
    base = dict(PRESETS[a.preset]) if a.preset else {"table_init": "legacy"}
    for k in ("m_spa", "ln_emb", "ln_bot", "ln_top"):
        if getattr(a, k) is not None:
            base[k] = getattr(a, k)
        elif k not in base:
            raise ValueError(f"--{k.replace('_', '-')} is required without --preset")
    full = list(base["ln_emb"])
    if a.max_rows:
        base["ln_emb"] = [min(v, a.max_rows) for v in full]
    cfg = DlrmConfig(base["m_spa"], base["ln_emb"], base["ln_bot"], base["ln_top"], a.batch, a.bag, a.seed,
                     a.index_dtype, a.bag_dist, a.bag_means, a.dist, a.alpha, a.table_dtype,
                     "mean" if a.mean else "sum", a.table_init or base["table_init"],
                     full if base["ln_emb"] != full else None)
    cfg.validate()
    return cfg


def main(argv=None):
    p, a = parse_args(argv)
    try:
        cfg = config_from_args(a)
    except ValueError as e:
        p.error(str(e))
    export(cfg, a.out, a.shard_gb)


if __name__ == "__main__":
    main()
