#!/usr/bin/env python3
"""The tiny-Llama checks of issue 11 on any device: transformers writes tiny random Llamas
(default rope, llama3 rope, tied embeddings; seeded), the `llama` CLI runs them with --device
DEVICE in fp32 and bf16, and each is compared with transformers on the same device:

- fp32: greedy ids identical to generate() for 24 tokens, last-prompt logits within 1e-4;
- bf16: ids identical to transformers' bf16 generate() for 16 tokens, or, where they first differ,
  transformers' two candidates within 2 bf16 ulps of each other (a near-tie); logits within 3e-2.

Prints one line per case and exits 1 when any fails. On the GPU machine (tools/gpu-llama runs it):
    python3 bench/check_llama_tiny.py --device cuda --binary .gpu/examples/llama/llama
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import torch
import transformers

transformers.utils.logging.disable_progress_bar()

BASE = dict(vocab_size=128, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2, intermediate_size=128, max_position_embeddings=256)
VARIANTS = {
    "default": {},
    "llama3_rope": {"rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                     "high_freq_factor": 4.0, "original_max_position_embeddings": 64}},
    "tied_embeddings": {"tie_word_embeddings": True},
}
PROMPT = [5, 17, 42, 99, 3, 8, 120, 64, 1, 77, 31]
TOKENS = {"fp32": 24, "bf16": 16}


def reference(model, device, n):
    model.generation_config.eos_token_id = None
    ids = torch.tensor([PROMPT], device=device)
    with torch.no_grad():
        out = model.generate(ids, do_sample=False, max_new_tokens=n, pad_token_id=0)
        seq = out[0].tolist()
        logits = model(ids).logits[0, -1].float().cpu()
        # Per generated position: transformers' logits there (for the near-tie check).
        step_logits = model(out[:, :-1]).logits[0, len(PROMPT) - 1:].float().cpu()
    return seq[len(PROMPT):], logits, step_logits


def run_cli(binary, model_dir, device, precision, n, out):
    cmd = [binary, "--model", model_dir, "--prompt-ids", ",".join(map(str, PROMPT)),
           "--max-new-tokens", str(n), "--device", device, "--precision", precision, "--json", out]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        raise RuntimeError(f"exit {r.returncode}: {r.stderr.strip()[-400:]}")
    return json.load(open(out))


def check(variant, precision, want, got):
    ids, logits, step_logits = want
    n = len(ids)
    diff = (torch.tensor(got["last_prompt_logits"]) - logits).abs().max().item()
    same = next((i for i in range(n) if got["generated_ids"][i] != ids[i]), n)
    tol = 1e-4 if precision == "fp32" else 3e-2
    ok = diff <= tol
    note = f"ids equal for {same}/{n}, logits max |diff| {diff:.2e} (tol {tol:g})"
    if same < n:
        row = step_logits[same]
        a, b = row[ids[same]].item(), row[got["generated_ids"][same]].item()
        gap = abs(a - b)
        ulp = 2.0 ** (torch.tensor(max(abs(a), 1e-3)).log2().floor().item() - 7)  # bf16 spacing
        tie = precision == "bf16" and gap <= 2 * ulp
        note += f"; step {same}: transformers {ids[same]} ({a:.5f}) vs {got['generated_ids'][same]} ({b:.5f}), gap {gap:.2e}"
        note += " = near-tie" if tie else ""
        ok = ok and tie
    return ok, f"{'ok  ' if ok else 'FAIL'} {variant} {precision}: {note}"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--binary", default="build/examples/llama/llama")
    ap.add_argument("--precisions", default="fp32,bf16")
    args = ap.parse_args()
    torch_device = "cuda" if args.device == "cuda" else "cpu"
    failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        for variant, extra in VARIANTS.items():
            torch.manual_seed(0)
            model = transformers.LlamaForCausalLM(transformers.LlamaConfig(**BASE, **extra)).eval()
            model_dir = os.path.join(tmp, variant)
            model.save_pretrained(model_dir)
            for precision in args.precisions.split(","):
                dtype = torch.float32 if precision == "fp32" else torch.bfloat16
                ref = transformers.LlamaForCausalLM.from_pretrained(model_dir, dtype=dtype).to(torch_device).eval()
                want = reference(ref, torch_device, TOKENS[precision])
                try:
                    got = run_cli(args.binary, model_dir, args.device, precision, TOKENS[precision],
                                  os.path.join(tmp, "out.json"))
                    ok, line = check(variant, precision, want, got)
                except Exception as e:  # noqa: BLE001 - reported per case
                    ok, line = False, f"FAIL {variant} {precision}: {e}"
                failed += not ok
                print(line, flush=True)
    print(f"check_llama_tiny --device {args.device}: {'all passed' if not failed else f'{failed} FAILED'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
