#!/usr/bin/env python3
"""Which bf16 Llama is closer to the truth: the last-prompt logits of luminal (the llama CLI's --json) and of
transformers in bf16 (sdpa and eager attention), each against transformers in fp32 on the same checkpoint and
prompt (bench_llama.py's: its --model-dir and its seeded 512-token prompt). Prints max / mean abs diffs and
the argmax each picks; never asserts (a measurement, not a test).

    python3 bench/bench_llama.py --rows luminal --out /tmp/l.json   # writes the model and llama_cli.json
    python3 bench/llama_logits_truth.py --model-dir /tmp/luminal_llama_bench/1b_L16_bf16 --luminal-json /tmp/llama_cli.json
"""
import argparse
import json

import torch
import transformers


def last_logits(model_dir, dtype, attn, prompt, dev):
    kw = {"dtype" if transformers.__version__ >= "5" else "torch_dtype": dtype, "attn_implementation": attn}
    model = transformers.LlamaForCausalLM.from_pretrained(model_dir, **kw).to(dev).eval()
    with torch.no_grad():
        out = model(input_ids=prompt[None].to(dev)).logits[0, -1].float().cpu()
    del model
    if dev == "cuda":
        torch.cuda.empty_cache()
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model-dir", required=True)
    ap.add_argument("--luminal-json", action="append", default=[], help="llama CLI --json files (repeatable)")
    ap.add_argument("--prompt-len", type=int, default=512)
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    a = ap.parse_args()
    vocab = json.load(open(f"{a.model_dir}/config.json"))["vocab_size"]
    prompt = torch.randint(0, vocab, (a.prompt_len,), generator=torch.Generator().manual_seed(1))  # bench_llama's
    truth = last_logits(a.model_dir, torch.float32, "eager", prompt, a.device)
    rows = {f"transformers bf16 {attn}": last_logits(a.model_dir, torch.bfloat16, attn, prompt, a.device)
            for attn in ("sdpa", "eager")}
    rows["transformers fp32 sdpa"] = last_logits(a.model_dir, torch.float32, "sdpa", prompt, a.device)
    for path in a.luminal_json:
        rows[f"luminal {path}"] = torch.tensor(json.load(open(path))["last_prompt_logits"], dtype=torch.float32)
    print(f"truth: transformers fp32 eager attention on {a.device}; logits max |x| {truth.abs().max():.3f}, "
          f"argmax {truth.argmax().item()} (top-2 gap {(truth.topk(2).values[0] - truth.topk(2).values[1]):.4f})")
    for name, x in rows.items():
        d = (x - truth).abs()
        print(f"{name}: max abs diff vs fp32 {d.max():.4f}, mean {d.mean():.4f}, argmax {x.argmax().item()}")
    names = list(rows)
    for i, p in enumerate(names):
        for q in names[i + 1:]:
            print(f"  {p} vs {q}: max abs diff {(rows[p] - rows[q]).abs().max():.4f}")


if __name__ == "__main__":
    main()
