"""Streaming safetensors for export.py: write tensors chunk by chunk (the header is known from shapes
alone), optionally as Hugging Face style shards + model.safetensors.index.json, and read tables back
memory-mapped. The byte layout is the safetensors library's own (tensors ordered by dtype, descending,
then name; header JSON padded with spaces to 8 bytes), so small files equal save_file's byte for byte."""
import dataclasses
import json
import os
import struct
import time

import numpy as np
import torch

# safetensors orders tensors by its Dtype enum, descending (BOOL < U8 < ... < BF16 < I32 < F32 < I64).
_DTYPE_RANK = {"BOOL": 0, "U8": 1, "I8": 2, "I16": 5, "F16": 7, "BF16": 8, "I32": 9, "F32": 11,
               "F64": 12, "I64": 13}
_ITEMSIZE = {"BOOL": 1, "U8": 1, "I8": 1, "I16": 2, "F16": 2, "BF16": 2, "I32": 4, "F32": 4, "F64": 8, "I64": 8}
_TORCH = {torch.float32: "F32", torch.bfloat16: "BF16", torch.int32: "I32", torch.int64: "I64",
          torch.float64: "F64", torch.float16: "F16", torch.uint8: "U8", torch.int8: "I8"}
INDEX_NAME = "model.safetensors.index.json"


@dataclasses.dataclass
class Entry:
    """One tensor to write: dtype name, shape, and a callable yielding its data in row-major chunks."""
    dtype: str
    shape: list
    chunks: object

    @staticmethod
    def of(t: torch.Tensor):
        """An entry for a tensor already in memory."""
        return Entry(_TORCH[t.dtype], list(t.shape), lambda: iter([t]))

    def nbytes(self):
        n = _ITEMSIZE[self.dtype]
        for s in self.shape:
            n *= s
        return n


def _order(entries):
    return sorted(entries, key=lambda name: (-_DTYPE_RANK[entries[name].dtype], name))


def header_bytes(entries, metadata=None):
    """The 8-byte length + JSON header safetensors writes for these entries."""
    head = {}
    if metadata:
        head["__metadata__"] = metadata
    off = 0
    for name in _order(entries):
        e = entries[name]
        head[name] = {"dtype": e.dtype, "shape": e.shape, "data_offsets": [off, off + e.nbytes()]}
        off += e.nbytes()
    js = json.dumps(head, separators=(",", ":")).encode()
    js += b" " * ((8 - len(js) % 8) % 8)
    return struct.pack("<Q", len(js)) + js


def _raw(chunk):
    if isinstance(chunk, torch.Tensor):
        c = chunk.contiguous().cpu()
        return c.view(torch.int16).numpy() if c.dtype == torch.bfloat16 else c.numpy()
    return np.ascontiguousarray(chunk)


def write_file(path, entries, metadata=None, progress=print):
    """Writes one safetensors file from entries, streaming each tensor's chunks (checked against the
    declared size); prints progress for big files."""
    total = sum(e.nbytes() for e in entries.values())
    t0, done, last = time.perf_counter(), 0, 0.0
    with open(path + ".part", "wb") as f:
        f.write(header_bytes(entries, metadata))
        for name in _order(entries):
            e, wrote = entries[name], 0
            for chunk in e.chunks():
                b = _raw(chunk)
                f.write(b.tobytes(order="C") if b.nbytes < (1 << 20) else memoryview(b).cast("B"))
                wrote += b.nbytes
            if wrote != e.nbytes():
                raise ValueError(f"[export] {name}: wrote {wrote} bytes, header says {e.nbytes()}")
            done += wrote
            now = time.perf_counter() - t0
            if total > (256 << 20) and (now - last > 2.0 or done == total):
                last = now
                progress(f"[export] {os.path.basename(path)}: {done / 1e9:.2f} / {total / 1e9:.2f} GB "
                         f"({done / 1e9 / max(now, 1e-9):.2f} GB/s)")
    os.replace(path + ".part", path)


def plan_shards(entries, shard_bytes):
    """Groups names (in file order) into shards of at most shard_bytes (a bigger tensor gets its own)."""
    shards, cur, size = [], [], 0
    for name in _order(entries):
        n = entries[name].nbytes()
        if cur and size + n > shard_bytes:
            shards.append(cur)
            cur, size = [], 0
        cur.append(name)
        size += n
    if cur:
        shards.append(cur)
    return shards


def write_sharded(entries, out_dir, shard_bytes, metadata=None, progress=print):
    """Writes model-0000i-of-0000n.safetensors shards and model.safetensors.index.json; returns the
    index path."""
    shards = plan_shards(entries, shard_bytes)
    weight_map = {}
    for i, names in enumerate(shards, 1):
        fname = f"model-{i:05d}-of-{len(shards):05d}.safetensors"
        write_file(os.path.join(out_dir, fname), {n: entries[n] for n in names}, metadata, progress)
        weight_map.update({n: fname for n in names})
    index = {"metadata": dict(metadata or {}, total_size=sum(e.nbytes() for e in entries.values())),
             "weight_map": dict(sorted(weight_map.items()))}
    path = os.path.join(out_dir, INDEX_NAME)
    with open(path, "w") as f:
        json.dump(index, f, indent=2)
    return path


def read_header(path):
    """(header dict, data start offset) of one safetensors file."""
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        return json.loads(f.read(n)), 8 + n


def tensor_files(path):
    """name -> file for a .safetensors file or an index JSON."""
    if path.endswith(".json"):
        with open(path) as f:
            wm = json.load(f)["weight_map"]
        return {k: os.path.join(os.path.dirname(path), v) for k, v in wm.items()}
    head, _ = read_header(path)
    return {k: path for k in head if k != "__metadata__"}


def open_tensor(path, name):
    """A read-only-on-disk numpy view (copy-on-write memmap) of one tensor; BF16 comes as int16 bits."""
    fpath = tensor_files(path)[name]
    head, start = read_header(fpath)
    info = head[name]
    np_dt = {"F32": np.float32, "BF16": np.int16, "I32": np.int32, "I64": np.int64, "F64": np.float64}[info["dtype"]]
    a, b = info["data_offsets"]
    if b == a:
        return np.zeros(info["shape"], np_dt), info["dtype"]
    mm = np.memmap(fpath, dtype=np_dt, mode="c", offset=start + a, shape=tuple(info["shape"]))
    return mm, info["dtype"]


def open_tables(path, n_tables):
    """[(memmap, dtype)] for emb_l.{k}.weight, k < n_tables."""
    return [open_tensor(path, f"emb_l.{k}.weight") for k in range(n_tables)]


def rows_f32(table, rows):
    """fp32 copy of the given rows of an opened table (bf16 bits upcast exactly)."""
    mm, dt = table
    sel = np.asarray(mm[rows])
    if dt == "BF16":
        return torch.from_numpy(sel.view(np.uint16).astype(np.uint32) << 16).view(torch.float32)
    return torch.from_numpy(np.ascontiguousarray(sel, dtype=np.float32))


def to_torch(table):
    """A torch tensor of a whole opened table in its stored dtype, sharing the memmap (no copy)."""
    mm, dt = table
    t = torch.from_numpy(mm)
    return t.view(torch.bfloat16) if dt == "BF16" else t


def save_small(tensors, path, metadata=None):
    """Writes an in-memory dict of tensors (the inputs file) through the same writer."""
    write_file(path, {k: Entry.of(v) for k, v in tensors.items()}, metadata, progress=lambda s: None)
