"""Exports tests/python's DLRM_Net (facebookresearch/dlrm's structure) for `luminal run`:

    python3 bench/export_dlrm_net.py --batch 2048 --out /tmp/dlrm_net     # seed shape
    luminal run /tmp/dlrm_net/model.pt2 --inputs /tmp/dlrm_net/inputs.safetensors \\
        --expect /tmp/dlrm_net/expected.safetensors --device cuda --stats --bench

Writes model.pt2 (torch.export, static shapes), inputs.safetensors (one tensor per flat user
input, by the exported placeholder names) and expected.safetensors (output_0: eager PyTorch, fp32,
on the CPU).
"""
import argparse
import os
import sys

import torch
from safetensors.torch import save_file

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "python"))
from dlrm_net import seed_inputs, seed_model  # noqa: E402


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--batch", type=int, default=2048)
    p.add_argument("--bag", type=int, default=2, help="bag lengths are uniform in [0, bag]")
    p.add_argument("--out", required=True, help="output folder")
    a = p.parse_args(argv)
    os.makedirs(a.out, exist_ok=True)
    model = seed_model()
    inputs = seed_inputs(a.batch, bag=a.bag)
    with torch.no_grad():
        want = model(*inputs)
        ep = torch.export.export(model, inputs, strict=False)
    torch.export.save(ep, os.path.join(a.out, "model.pt2"))
    names = [s.arg.name for s in ep.graph_signature.input_specs
             if s.kind == torch.export.graph_signature.InputKind.USER_INPUT]
    flat = [inputs[0], inputs[1], *inputs[2]]
    save_file({n: t.contiguous() for n, t in zip(names, flat, strict=True)},
              os.path.join(a.out, "inputs.safetensors"))
    save_file({"output_0": want.contiguous()}, os.path.join(a.out, "expected.safetensors"))
    print(f"[export_dlrm_net] {a.out}: model.pt2 (torch {torch.__version__}), inputs {names}")


if __name__ == "__main__":
    main()
