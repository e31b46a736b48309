"""Where luminal.compile's time goes for a DLRM preset (default Kaggle, full tables) on a device:
torch.export, the program's JSON, the weights' handover, C++ (translate, rules, plan build), the
first call (the search) and a second call. Prints one line per step; never asserts."""
import argparse
import inspect
import os
import sys
import time

import torch
import torch.utils._pytree

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "examples", "dlrm"))
import export as dlrm_export  # noqa: E402

import luminal  # noqa: E402
import luminal.aot as aot  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--preset", default="kaggle")
    p.add_argument("--batch", type=int, default=2048)
    p.add_argument("--max-rows", type=int)
    p.add_argument("--device", default="cuda")
    a = p.parse_args()
    from torch._export.serde.serialize import serialize
    print("torch", torch.__version__, "| serialize keywords:", "serialize_state_dict" in inspect.signature(serialize).parameters)
    cfg = dlrm_export.from_preset(a.preset, a.batch, a.max_rows)
    model = dlrm_export.build_model(cfg).eval().to(a.device)
    inputs = tuple(t.to(a.device) if isinstance(t, torch.Tensor) else [x.to(a.device) for x in t]
                   for t in dlrm_export.make_inputs(cfg))
    gb = sum(p.numel() * p.element_size() for p in model.parameters()) / 1e9
    t = [time.perf_counter()]
    lap = lambda: (t.append(time.perf_counter()), t[-1] - t[-2])[1]  # noqa: E731
    with torch.no_grad():
        ep = torch.export.export(model, inputs, strict=False)
    print(f"{a.preset} ({gb:.2f} GB of weights) on {a.device}: torch.export {lap():.2f} s")
    js = aot._program_json(ep)
    print(f"program JSON ({len(js) / 1e3:.0f} kB) {lap():.2f} s")
    keep = []
    w, c = aot._tensor_entries(ep, a.device, keep)
    print(f"weight entries {lap():.2f} s")
    prog = aot._luminal.Program.from_memory(js, w, c, {"device": a.device})
    print(f"C++ translate + rules + plan {lap():.2f} s")
    flat = torch.utils._pytree.tree_flatten((inputs, {}))[0]
    fast = aot.CompiledModule(prog, ep.call_spec.in_spec, aot._leaf_kinds(flat), ep.call_spec.out_spec, keepalive=keep)
    fast(*inputs)
    torch.cuda.synchronize() if a.device.startswith("cuda") else None
    print(f"first call (search) {lap():.2f} s; {prog.search_report()}")
    fast(*inputs)
    torch.cuda.synchronize() if a.device.startswith("cuda") else None
    print(f"second call {lap() * 1e3:.2f} ms")
    t0 = time.perf_counter()
    luminal.compile(model, inputs)
    print(f"luminal.compile end to end {time.perf_counter() - t0:.2f} s")


if __name__ == "__main__":
    main()
