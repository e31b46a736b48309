"""Roofline floors for a DLRM forward on the H200: FLOPs / rate at the matmul precision, and bytes /
bandwidth for an ideal fused forward (every byte crosses DRAM once). Pure Python: tested on the CPU.

Rates (H200 SXM, dense, no sparsity): fp32 FFMA ~67 TFLOP/s, tf32 ~495, bf16 ~990, int8 ~1979 (datasheet);
bandwidth 4.27 TB/s (device-to-device copy measured on the lent H200, shared/GPU.md). The int8 mode
quantizes only the tables (the MLPs run bf16, as luminal's --precision int8 does), so its compute floor
uses the bf16 rate; MATMUL_PRECISION says so and is the one place to change it.
"""

RATES = {"fp32": 67e12, "tf32": 495e12, "tf32x3": 165e12, "bf16": 990e12, "int8": 1979e12, "fp8": 1979e12}
RATE_SOURCE = {"fp32": "datasheet FFMA", "tf32": "datasheet dense", "tf32x3": "a third of tf32's (three products)",
               "bf16": "datasheet dense", "int8": "datasheet dense", "fp8": "datasheet dense"}
BANDWIDTH = 4.27e12          # bytes/s, device-to-device copy (read + write), measured
SYNC_FLOOR_US = 6.6          # CUDA graph launch + sync of one kernel, measured (shared/GPU.md)
# fp8: int8 tables and e4m3 GEMMs (weights read as e4m3 copies).
MATMUL_PRECISION = {"fp32": "fp32", "tf32": "tf32", "tf32x3": "tf32x3", "bf16": "bf16", "int8": "bf16", "fp8": "fp8"}
WEIGHT_BYTES = {"fp32": 4, "tf32": 4, "tf32x3": 4, "bf16": 2, "int8": 2, "fp8": 1}  # MLP weights as the mode reads them


def table_row_bytes(d, precision):
    """Bytes read per gathered row: fp32 rows for fp32/tf32, bf16 rows, or int8 codes + fp32 scale and
    bias (FBGEMM's row-wise layout)."""
    return {"fp32": 4 * d, "tf32": 4 * d, "tf32x3": 4 * d, "bf16": 2 * d, "int8": d + 8, "fp8": d + 8}[precision]


def mlp_macs(widths):
    """Multiply-accumulates per sample of an MLP with these layer widths."""
    return sum(a * b for a, b in zip(widths[:-1], widths[1:]))


def mlp_params(widths):
    """Weights + biases of an MLP."""
    return mlp_macs(widths) + sum(widths[1:])


def flops(cfg, batch, nnz_total=None):
    """FLOPs of one forward: both MLPs (2 per MAC), the dot interaction over the needed pairs
    (n(n-1)/2 dot products of length d) and the bag additions (one add per gathered element)."""
    d, n = cfg["m_spa"], len(cfg["ln_emb"]) + 1
    nnz = nnz_total if nnz_total is not None else batch * cfg.get("bag", 1) * len(cfg["ln_emb"])
    return (2 * batch * (mlp_macs(cfg["ln_bot"]) + mlp_macs(cfg["ln_top"]))
            + 2 * batch * (n * (n - 1) // 2) * d + nnz * d)


def bytes_moved(cfg, batch, precision, nnz_total=None, rows_gathered=None):
    """DRAM bytes of an ideal fused forward: MLP weights once, every gathered row once (rows_gathered:
    unique (table, row) pairs when known, else every lookup), the indices and offsets, dense_x in
    (fp32) and the output (fp32)."""
    nnz = nnz_total if nnz_total is not None else batch * cfg.get("bag", 1) * len(cfg["ln_emb"])
    rows = rows_gathered if rows_gathered is not None else nnz
    ib = 8 if cfg.get("index_dtype") == "int64" else 4
    weights = (mlp_params(cfg["ln_bot"]) + mlp_params(cfg["ln_top"])) * WEIGHT_BYTES[precision]
    gathered = rows * table_row_bytes(cfg["m_spa"], precision)
    io = nnz * ib + batch * len(cfg["ln_emb"]) * 4 + batch * cfg["ln_bot"][0] * 4 + batch * 4
    return {"weights": weights, "rows": gathered, "io": io, "total": weights + gathered + io}


def floor(cfg, batch, precision, nnz_total=None, rows_gathered=None):
    """The roofline floor of one forward: max(FLOPs / rate, bytes / bandwidth), in microseconds, with
    its parts and which bound wins."""
    f = flops(cfg, batch, nnz_total)
    b = bytes_moved(cfg, batch, precision, nnz_total, rows_gathered)
    mp = MATMUL_PRECISION[precision]
    compute_us = f / RATES[mp] * 1e6
    memory_us = b["total"] / BANDWIDTH * 1e6
    return {"flops": f, "bytes": b, "rate_precision": mp, "rate": RATES[mp],
            "compute_us": compute_us, "memory_us": memory_us, "floor_us": max(compute_us, memory_us),
            "bound": "compute" if compute_us >= memory_us else "memory"}


def describe_rates():
    """One line per rate, for the report."""
    lines = [f"- {p}: {RATES[p] / 1e12:.0f} TFLOP/s ({RATE_SOURCE[p]})" for p in RATES]
    lines.append(f"- int8 mode: MLPs run bf16, so its compute floor uses the {MATMUL_PRECISION['int8']} rate")
    lines.append(f"- bandwidth: {BANDWIDTH / 1e12:.2f} TB/s (device-to-device copy, measured on the H200)")
    lines.append(f"- latency incl. sync can not go below ~{SYNC_FLOOR_US} us (1-kernel CUDA graph + sync)")
    return "\n".join(lines)
