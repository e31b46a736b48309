"""A canned production-sweep result (two cells) for the report tests."""

FLOOR = {"flops": 2.0e9, "bytes": {"weights": 1, "rows": 2, "io": 3, "total": 4.0e6}, "rate_precision": "fp32",
         "rate": 67e12, "compute_us": 29.85, "memory_us": 0.94, "floor_us": 29.85, "bound": "compute"}


def row(backend, lat, pipe, mad=1e-7, sp=0.9999, label=None):
    r = {"backend": backend, "events": {"mean_us": lat - 3}, "latency": {"mean_us": lat},
         "pipelined": {"mean_us": pipe}, "max_abs_diff": mad, "spearman": sp}
    if label:
        r["label"] = label
    return r


def result():
    return {
        "plan": {"trimmed": ["torch.compile at batch 256: not run"]},
        "cells": [
            {"preset": "kaggle", "batch": 2048, "precision": "fp32", "floor": dict(FLOOR),
             "rows": [row("luminal", 150.0, 120.0), row("pytorch eager", 800.0, 700.0),
                      row("CUDA-graph replay", 240.0, 230.0)]},
            {"preset": "kaggle", "batch": 2048, "precision": "int8", "floor": dict(FLOOR, floor_us=10.0),
             "rows": [{"backend": "luminal", "error": "exit 2: [dlrm] unknown precision | int8"},
                      row("pytorch eager", 500.0, 400.0, label="PyTorch bf16, no int8 path"),
                      row("CUDA-graph replay", 200.0, 2048 / 1e7 * 1e6, label="PyTorch bf16, no int8 path")]},
        ],
    }
