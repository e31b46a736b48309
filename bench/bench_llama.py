#!/usr/bin/env python3
"""Llama decode benchmark (issue 11): the Llama-3.2-1B architecture with random weights, batch 1,
greedy, TTFT for a 512-token prompt and TPOT over 128 new tokens, four rows in one run:

- floor: TPOT floor = weight bytes (every parameter once; the tied embedding / LM head once) / copy
  rate, where copy rate = 2 * buffer bytes / time of the fastest device-to-device copy of a 2 GiB
  buffer (read + write bytes, as shared/GPU.md's 4.27 TB/s). TTFT floor = max(prefill FLOPs / bf16
  matmul rate, weight bytes / copy rate), with prefill FLOPs = 2 * prompt * (layer matmul params) +
  2 * hidden * vocab (LM head on the last position) + 2 * layers * prompt^2 * heads * head_dim
  (causal attention) and matmul rate from the fastest 8192^3 bf16 matmul.
- transformers eager: our greedy loop over model.forward with a DynamicCache, logits_to_keep=1.
- transformers static+compile: a StaticCache, eager prefill, the decode step under
  torch.compile(mode="reduce-overhead", fullgraph=True) (falls back to fullgraph=False).
- luminal: the `llama` CLI (--bench) on the same saved checkpoint and prompt; its greedy ids are
  compared with the eager row's (identical leading tokens; at the first difference, transformers'
  top-2 logit gap and the gap between the two chosen tokens).

TTFT = prefill + first token; TPOT = mean of the decode steps after it (127 for 128 new tokens), as
the CLI reports them; host clock around each step with the device synced; means (and p50s) over
--iters generations after one warm-up generation. The model is written once by save_pretrained into
--model-dir (reused when bench_spec.json there matches). Each row is independent: an error becomes an
"error" entry. Rows that cannot start inside --time-budget are skipped. Results: --out (JSON).

    python3 bench/bench_llama.py --out /tmp/llama_bench.json               # the GPU machine
    python3 bench/bench_llama.py --tiny --device cpu --out /tmp/tiny.json  # self-test on a CPU
"""
import argparse
import copy
import datetime
import inspect
import json
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import time
import traceback

import torch
import transformers

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
T0 = time.perf_counter()
DTYPES = {"bf16": torch.bfloat16, "fp32": torch.float32}
ROPE = {"rope_type": "llama3", "factor": 32.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
        "original_max_position_embeddings": 8192}
LLAMA_1B = dict(vocab_size=128256, hidden_size=2048, num_hidden_layers=16, num_attention_heads=32,
                num_key_value_heads=8, head_dim=64, intermediate_size=8192)
# initializer_range 0.2: at the default 0.02 a model this small decodes one token over and over.
TINY = dict(vocab_size=512, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2, head_dim=16, intermediate_size=128, initializer_range=0.2)
BENCH_KEYS = ("seed", "precision", "device")  # in bench_spec.json, not in config.json
MIN_START_S = {"floor": 5, "eager": 20, "luminal": 30, "compile": 60}  # rows need this much budget


NAMES = {"floor": "floor", "eager": "transformers eager", "compile": "transformers static+compile",
         "luminal": "luminal"}


class BudgetExceeded(Exception):
    pass


def log(msg):
    print(f"[bench_llama {time.strftime('%H:%M:%S')} +{time.perf_counter() - T0:.0f}s] {msg}",
          file=sys.stderr, flush=True)


def sync(dev):
    if dev.type == "cuda":
        torch.cuda.synchronize()


def spec(args):
    """Everything that determines the checkpoint's bytes."""
    shape = dict(TINY if args.tiny else LLAMA_1B)
    if args.layers:
        shape["num_hidden_layers"] = args.layers
    special = (1, 2) if args.tiny else (128000, 128001)  # inside the vocabulary
    return dict(shape, rms_norm_eps=1e-5, rope_theta=500000.0, rope_scaling=ROPE,
                max_position_embeddings=131072, tie_word_embeddings=True, bos_token_id=special[0],
                eos_token_id=special[1], seed=0, precision=args.precision, device=args.device)


def load_or_write_model(args, dev):
    """Random-weight Llama, saved once into --model-dir; returns the model on dev, in eval mode."""
    s, dtype = spec(args), DTYPES[args.precision]
    marker = os.path.join(args.model_dir, "bench_spec.json")
    kw = {"dtype" if transformers.__version__ >= "5" else "torch_dtype": dtype}
    if os.path.isfile(marker) and json.load(open(marker)) == s:
        log(f"reusing {args.model_dir}")
        return transformers.LlamaForCausalLM.from_pretrained(args.model_dir, **kw).to(dev).eval()
    # A deep copy: transformers 5 writes rope_theta into the rope_scaling dict it is given.
    cfg = transformers.LlamaConfig(**copy.deepcopy({k: v for k, v in s.items() if k not in BENCH_KEYS}))
    torch.manual_seed(s["seed"])
    with dev:  # init on the device: seconds instead of a minute for 1.2B parameters on the CPU
        model = transformers.LlamaForCausalLM(cfg).to(dtype).eval()
    shutil.rmtree(args.model_dir, ignore_errors=True)
    model.save_pretrained(args.model_dir)
    json.dump(s, open(marker, "w"), indent=1)
    log(f"wrote {args.model_dir} ({sum(p.numel() for p in model.parameters()) / 1e9:.3f} B params)")
    # Read back, never the model written: .to(bf16) also rounds rope's inv_freq buffer to bf16, which
    # from_pretrained (and luminal) keep in fp32; that moved transformers' logits by ~0.6 on fresh runs.
    del model
    return transformers.LlamaForCausalLM.from_pretrained(args.model_dir, **kw).to(dev).eval()


class Api:
    """forward() keywords of the installed transformers: the cache's name (past_key_values, or cache in
    later 5.x), cache_position (4.x) and logits_to_keep (the LM head on the last position only)."""

    def __init__(self, model):
        params = inspect.signature(model.forward).parameters
        self.cache_kw = "past_key_values" if "past_key_values" in params else "cache"
        self.cache_position = "cache_position" in params
        self.keep = next((k for k in ("logits_to_keep", "num_logits_to_keep") if k in params), None)

    def kwargs(self, cache, pos):
        kw = {self.cache_kw: cache, "position_ids": pos.unsqueeze(0), "use_cache": True}
        if self.cache_position:
            kw["cache_position"] = pos
        if self.keep:
            kw[self.keep] = 1
        return kw


def static_cache(model, max_len, dev):
    params = inspect.signature(transformers.StaticCache.__init__).parameters
    offer = {"config": model.config, "max_cache_len": max_len, "max_batch_size": 1, "batch_size": 1,
             "device": dev, "dtype": model.dtype}
    return transformers.StaticCache(**{k: v for k, v in offer.items() if k in params})


def generate(model, api, prompt, n, cache, step, keep_logits=False):
    """Greedy: eager prefill, then n-1 decode steps through step(tok, pos) -> (tok, logits).
    Returns (ids, ttft_ms, step_ms list, per-token logits if keep_logits)."""
    dev, logits = prompt.device, []
    sync(dev)
    t = time.perf_counter()
    pos = torch.arange(prompt.numel(), device=dev)
    out = model(input_ids=prompt[None], **api.kwargs(cache, pos)).logits[:, -1]
    tok = out.argmax(-1, keepdim=True)
    sync(dev)
    ttft, steps, ids = (time.perf_counter() - t) * 1e3, [], [tok]
    if keep_logits:
        logits.append(out[0].clone())
    pos = pos[-1:] + 1
    for _ in range(n - 1):
        t = time.perf_counter()
        tok, out = step(tok, pos)
        sync(dev)
        steps.append((time.perf_counter() - t) * 1e3)
        ids.append(tok)
        if keep_logits:
            logits.append(out[0].clone())
        pos = pos + 1
    return torch.cat(ids, 1)[0].tolist(), ttft, steps, logits


def timed(fn, iters, deadline):
    """One warm-up call, then up to iters timed calls while the budget lasts."""
    warm = fn(True)
    runs = []
    while len(runs) < iters and (not runs or time.perf_counter() < deadline - 10):
        runs.append(fn(False))
    ttft = [r[1] for r in runs]
    tpot = [s for r in runs for s in r[2]]
    return warm, {"ttft_ms": sum(ttft) / len(ttft), "tpot_ms": sum(tpot) / max(len(tpot), 1),
                  "ttft_ms_p50": sorted(ttft)[len(ttft) // 2], "tpot_ms_p50": sorted(tpot)[len(tpot) // 2],
                  "iters": len(runs), "same_ids_each_run": all(r[0] == warm[0] for r in runs)}


def floor_row(model, args, dev, ctx):
    cfg, p = model.config, ctx["prompt"].numel()
    weight_bytes = sum(t.numel() * t.element_size() for t in model.parameters())  # a tied tensor once
    n = (2 << 30 if dev.type == "cuda" else 256 << 20) // 2
    src = torch.randn(n, device=dev, dtype=torch.bfloat16)
    dst = torch.empty_like(src)
    k = 8192 if dev.type == "cuda" else 512
    a = torch.randn(k, k, device=dev, dtype=torch.bfloat16)
    b = torch.randn(k, k, device=dev, dtype=torch.bfloat16)
    copy_s, mm_s = best_of(lambda: dst.copy_(src), dev), best_of(lambda: a @ b, dev)
    copy_rate, mm_rate = 2 * src.numel() * src.element_size() / copy_s, 2 * k ** 3 / mm_s
    h, layers = cfg.hidden_size, cfg.num_hidden_layers
    q, kv = cfg.num_attention_heads * cfg.head_dim, cfg.num_key_value_heads * cfg.head_dim
    layer_params = 2 * h * q + 2 * h * kv + 3 * h * cfg.intermediate_size  # q, o; k, v; gate, up, down
    flops = 2 * p * layers * layer_params + 2 * h * cfg.vocab_size + 2 * layers * p * p * q
    tpot = weight_bytes / copy_rate * 1e3
    return {"ttft_ms": max(flops / mm_rate * 1e3, tpot), "tpot_ms": tpot, "weight_bytes": weight_bytes,
            "copy_rate_Bps": copy_rate, "copy_buffer_bytes": src.numel() * src.element_size(),
            "matmul_flops_per_s": mm_rate, "matmul_n": k, "prefill_flops": flops}


def best_of(fn, dev, reps=10):
    """Fastest of reps calls after one warm-up, in seconds (CUDA events on the GPU)."""
    fn()
    times = []
    for _ in range(reps):
        if dev.type == "cuda":
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end) / 1e3)
        else:
            t = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t)
    return min(times)


def eager_row(model, args, dev, ctx):
    api, cache_cls = Api(model), transformers.DynamicCache

    def run(keep):
        cache = cache_cls()
        step = lambda tok, pos: decode(model, api, cache, tok, pos)
        return generate(model, api, ctx["prompt"], args.new_tokens, cache, step, keep)

    with torch.no_grad():
        warm, row = timed(run, args.iters, ctx["deadline"])
    ctx["hf_ids"], ctx["hf_logits"] = warm[0], warm[3]
    # Random weights can decode degenerately (one token repeated): then equal ids say little.
    return dict(row, cache="DynamicCache", ids_head=warm[0][:16], distinct_ids=len(set(warm[0])))


def decode(model, api, cache, tok, pos):
    out = model(input_ids=tok, **api.kwargs(cache, pos)).logits[:, -1]
    return out.argmax(-1, keepdim=True), out


def compile_row(model, args, dev, ctx):
    api, prompt = Api(model), ctx["prompt"]
    cache = static_cache(model, prompt.numel() + args.new_tokens, dev)
    mark = getattr(torch.compiler, "cudagraph_mark_step_begin", lambda: None)
    fullgraph_error = None
    for fullgraph in (True, False):
        torch._dynamo.reset()
        compiled = torch.compile(lambda tok, pos: decode(model, api, cache, tok, pos)[0],
                                 mode="reduce-overhead", fullgraph=fullgraph)

        def step(tok, pos):
            mark()
            return compiled(tok, pos).clone(), None  # clone: the next graph replay overwrites its output

        def run(keep):
            cache.reset()
            return generate(model, api, prompt, args.new_tokens, cache, step)

        if time.perf_counter() > ctx["deadline"] - 10:  # the alarm fires once; a retry must not outlive it
            raise BudgetExceeded("no time left for a retry without fullgraph")
        log(f"compile: warm-up (first call compiles), fullgraph={fullgraph}")
        try:
            with torch.no_grad():
                warm, row = timed(run, args.iters, ctx["deadline"])
            break
        except BudgetExceeded:
            raise
        except Exception as e:  # noqa: BLE001 - a fullgraph failure retries once without it
            if not fullgraph:
                raise
            fullgraph_error = f"{type(e).__name__}: {str(e)[:300]}"
            log(f"compile: fullgraph=True failed ({fullgraph_error[:120]}); retrying")
    same = leading_equal(warm[0], ctx["hf_ids"]) if "hf_ids" in ctx else None
    return dict(row, cache="StaticCache", prefill="eager", fullgraph=fullgraph, leading_ids_equal_eager=same,
                fullgraph_error=fullgraph_error)


def leading_equal(a, b):
    """How many leading items of a and b are equal."""
    return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))


def find_binary(args):
    for b in [args.binary] if args.binary else [".gpu/examples/llama/llama", "build/examples/llama/llama"]:
        path = b if os.path.isabs(b) else os.path.join(ROOT, b)
        if os.path.isfile(path):
            return path
    return None


def luminal_row(model, args, dev, ctx, variant=""):
    """The llama CLI's row; variant ("NAME=VALUE+NAME=VALUE") sets documented environment options."""
    if dev.type == "cuda":
        torch.cuda.empty_cache()  # hand the floor row's buffers back before another process uses the GPU
    binary = find_binary(args)
    if not binary:
        return {"skipped": f"no llama binary ({args.binary or '.gpu/ or build/examples/llama/llama'})"}
    out_dir = os.path.dirname(os.path.abspath(args.out))
    tag = re.sub(r"[^A-Za-z0-9_]", "_", variant)
    js, log_path = (os.path.join(out_dir, f"llama_cli{tag}.{ext}") for ext in ("json", "log"))
    env = dict(os.environ, **dict(kv.split("=", 1) for kv in variant.split("+") if kv))
    cmd = [binary, "--model", args.model_dir, "--prompt-ids", ",".join(map(str, ctx["prompt"].tolist())),
           "--max-new-tokens", str(args.new_tokens), "--device", args.device, "--precision", args.precision,
           "--bench", "--iters", str(args.iters), "--json", js]
    if shutil.which("stdbuf"):
        cmd = ["stdbuf", "-oL", "-eL"] + cmd  # a killed run still leaves its printed lines
    timeout = max(10, min(args.luminal_timeout, ctx["deadline"] - time.perf_counter() - 5))
    log(f"luminal: {binary} (timeout {timeout:.0f} s, log {log_path})")
    if os.path.exists(js):
        os.remove(js)
    with open(log_path, "w") as f:
        try:
            rc = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, timeout=timeout, env=env).returncode
        except subprocess.TimeoutExpired:
            rc = f"timeout after {timeout:.0f} s"
    text = open(log_path).read()
    if rc != 0 or not os.path.isfile(js):
        return salvage(text, ctx, {"error": f"llama exited {rc}", "log_tail": text[-600:]})
    r = json.load(open(js))
    b = r.get("bench") or {}
    row = {"ttft_ms": (b.get("ttft_ms") or {}).get("mean", r["ttft_ms"]),
           "tpot_ms": (b.get("tpot_ms") or {}).get("mean", r["tpot_ms"]),
           "ttft_ms_p50": (b.get("ttft_ms") or {}).get("p50"), "tpot_ms_p50": (b.get("tpot_ms") or {}).get("p50"),
           "setup_s": r.get("setup_s"), "device_description": r.get("device"), "binary": binary}
    row.update(compare(r, ctx))
    return row


def salvage(text, ctx, row):
    """A killed or failed CLI run: the first (unwarmed) generation's numbers, if it printed them."""
    t = re.search(r"^ttft ([\d.]+) ms \| tpot ([\d.]+) ms", text, re.M)
    ids = re.search(r"^generated_ids ([\d,]+)$", text, re.M)
    if t:
        row.update(ttft_ms=float(t[1]), tpot_ms=float(t[2]), partial="from the CLI's first generation (no warm-up)")
    if ids:
        row.update(compare({"generated_ids": [int(x) for x in ids[1].split(",")]}, ctx))
    return row


def compare(r, ctx):
    """luminal's greedy ids against the eager row's, and transformers' logits where they part."""
    hf, lum = ctx.get("hf_ids"), r["generated_ids"]
    if hf is None:
        return {"compare": "no transformers eager ids (that row failed or was skipped)"}
    same = leading_equal(hf, lum)
    res = {"leading_ids_equal": same, "of": len(hf), "ids_head": lum[:16]}
    logits = ctx["hf_logits"]
    if r.get("last_prompt_logits"):
        lp = torch.tensor(r["last_prompt_logits"], dtype=torch.float32)
        res["prompt_logits_max_abs_diff"] = (lp - logits[0].float().cpu()).abs().max().item()
    if same < min(len(hf), len(lum)):
        step = logits[same].float().cpu()
        top = step.topk(2)
        res["first_difference"] = {
            "step": same, "transformers_id": hf[same], "luminal_id": lum[same],
            "transformers_top2_logits": top.values.tolist(),
            "transformers_top2_gap": (top.values[0] - top.values[1]).item(),
            "transformers_gap_between_choices": (step[hf[same]] - step[lum[same]]).item()}
    return res


def table(rows, prompt_len, new_tokens):
    fl = (rows.get("floor") or {}).get("tpot_ms")
    lines = [f"| row | TTFT ms ({prompt_len} prompt) | TPOT ms ({new_tokens} tokens) | x floor (TPOT) | notes |",
             "|---|---|---|---|---|"]
    for key, name in NAMES.items():
        r = rows.get(key, {"skipped": "not requested"})
        if "tpot_ms" not in r:
            lines.append(f"| {name} | - | - | - | {r.get('error') or r.get('skipped')} |")
            continue
        x = f"{r['tpot_ms'] / fl:.2f}" if fl else "-"
        note = ""
        if key == "floor":
            note = f"{r['weight_bytes'] / 1e9:.3f} GB weights at {r['copy_rate_Bps'] / 1e12:.3f} TB/s copy"
        elif key == "luminal" and "leading_ids_equal" in r:
            note = f"PARTIAL, {r['error']}: " if r.get("partial") else ""
            note += f"ids equal eager for {r['leading_ids_equal']}/{r['of']}"
            d = r.get("first_difference")
            if d:
                note += f"; at step {d['step']} transformers top-2 gap {d['transformers_top2_gap']:.4g}"
        elif key == "eager":
            note = f"{r['distinct_ids']} distinct ids in its {new_tokens} greedy tokens"
        elif key == "compile":
            note = f"fullgraph={r['fullgraph']}, ids equal eager for {r['leading_ids_equal_eager']}"
        lines.append(f"| {name} | {r['ttft_ms']:.2f} | {r['tpot_ms']:.3f} | {x} | {note} |")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default="llama_bench.json")
    ap.add_argument("--model-dir", default=None, help="default /tmp/luminal_llama_bench/<shape>")
    ap.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    ap.add_argument("--precision", default="bf16", choices=list(DTYPES))
    ap.add_argument("--tiny", action="store_true", help="hidden 64, vocab 512: a self-test on the CPU")
    ap.add_argument("--layers", type=int, default=0, help="override the layer count (default 16)")
    ap.add_argument("--prompt-len", type=int, default=512)
    ap.add_argument("--new-tokens", type=int, default=128)
    ap.add_argument("--iters", type=int, default=3, help="timed generations per row after one warm-up")
    ap.add_argument("--rows", default="floor,eager,luminal,compile")
    ap.add_argument("--binary", default=None, help="llama CLI (default .gpu/ then build/examples/llama/llama)")
    ap.add_argument("--luminal-variants", default="",
                    help="extra luminal rows under documented options, ';'-separated, e.g. LUMINAL_RULES=none;LUMINAL_GEMV=0")
    ap.add_argument("--luminal-timeout", type=float, default=200)
    ap.add_argument("--time-budget", type=float, default=520, help="seconds for the whole run")
    args = ap.parse_args()
    s = spec(args)
    shape = f"{'tiny' if args.tiny else '1b'}_L{s['num_hidden_layers']}_{args.precision}"
    args.model_dir = args.model_dir or f"/tmp/luminal_llama_bench/{shape}"
    deadline = T0 + args.time_budget
    dev = torch.device(args.device)
    env = {"torch": torch.__version__, "transformers": transformers.__version__,
           "python": platform.python_version(), "cuda": torch.version.cuda,
           "device": torch.cuda.get_device_name() if dev.type == "cuda" else platform.processor() or "cpu",
           "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"), "args": vars(args)}
    result = {"env": env, "rows": {}}
    rows = result["rows"]

    def save():  # after every row, with the table so far: a run killed midway still leaves both
        result["table"] = table(rows, args.prompt_len, args.new_tokens)
        with open(args.out, "w") as f:
            json.dump(result, f, indent=1)

    def on_alarm(*_):
        raise BudgetExceeded(f"time budget {args.time_budget:.0f} s exceeded")

    signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(max(1, int(args.time_budget - (time.perf_counter() - T0))))
    log(f"torch {torch.__version__}, transformers {transformers.__version__}, {env['device']}")
    save()
    model = load_or_write_model(args, dev)
    gen = torch.Generator().manual_seed(1)
    prompt = torch.randint(0, s["vocab_size"], (args.prompt_len,), generator=gen).to(dev)
    ctx = {"deadline": deadline, "prompt": prompt}
    result["model"] = {"dir": args.model_dir, "spec": s, "prompt_len": args.prompt_len, "new_tokens": args.new_tokens}
    fns = {"floor": floor_row, "eager": eager_row, "luminal": luminal_row, "compile": compile_row}
    for v in filter(None, args.luminal_variants.split(";")):  # A/B rows: JSON and log only
        fns[f"luminal[{v}]"] = lambda model, args, dev, ctx, v=v: luminal_row(model, args, dev, ctx, v)
        MIN_START_S[f"luminal[{v}]"] = MIN_START_S["luminal"]
    names = args.rows.split(",") + [n for n in fns if n.startswith("luminal[")]
    for name in names:
        left = deadline - time.perf_counter()
        if left < MIN_START_S[name]:
            rows[name] = {"skipped": f"time budget: {left:.0f} s left, row needs {MIN_START_S[name]} s to start"}
            log(f"{name}: skipped ({rows[name]['skipped']})")
            continue
        log(f"{name}: start ({left:.0f} s of budget left)")
        t = time.perf_counter()
        try:
            rows[name] = fns[name](model, args, dev, ctx)
        except Exception as e:  # noqa: BLE001 - one row's failure must not stop the others
            rows[name] = {"error": f"{type(e).__name__}: {str(e)[:500]}", "traceback": traceback.format_exc()[-2000:]}
            log(rows[name]["traceback"])
        rows[name]["wall_s"] = round(time.perf_counter() - t, 1)
        brief = {k: v for k, v in rows[name].items() if k in ("ttft_ms", "tpot_ms", "error", "skipped")}
        log(f"{name}: done in {rows[name]['wall_s']} s: {json.dumps(brief)}")
        save()
    signal.alarm(0)
    save()
    print(result["table"])


if __name__ == "__main__":
    main()
