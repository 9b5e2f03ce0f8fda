#!/usr/bin/env python3
"""The engine's logits against Hugging Face transformers, on the GPU machine.

For each model: `inferlab init-weights` writes a checkpoint with random weights at the real
shapes; transformers loads it (AutoModelForCausalLM.from_pretrained, bf16, SDPA attention) and
runs a 512-token prompt then 64 teacher-forced decode steps through its KV cache; `inferlab
logits` runs the same 576 tokens the same way (prefill 512, then 64 decode steps) on the CUDA
backend. Per position: cosine similarity of the two logit vectors (fp64) and whether the argmax
agrees. For Llama 3.2 1B, greedy generation of 64 tokens from a text prompt is compared too
(`inferlab generate --temperature 0` against transformers' `generate(do_sample=False)`).

Usage on the device:  python3 validation/engine_logits.py BUILD/inferlab $OUT/engine_logits.json
                      [--models llama-3.2-1b,qwen2.5-1.5b,llama-3.2-3b,llama-3-8b]
"""
import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np
import torch

PROMPT_TOKENS, DECODE_STEPS = 512, 64
GREEDY_PROMPT = "What is the tallest mountain in the world, and how was its height measured?"


def run(cmd):
    t = time.time()
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({r.returncode}):\n{r.stderr}")
    return r.stdout, time.time() - t


def load_hf(ckpt, dtype=torch.bfloat16, attention="sdpa"):
    from transformers import AutoModelForCausalLM
    try:  # transformers 5 names it dtype; 4.x torch_dtype
        model = AutoModelForCausalLM.from_pretrained(ckpt, dtype=dtype,
                                                     attn_implementation=attention)
    except TypeError:
        model = AutoModelForCausalLM.from_pretrained(ckpt, torch_dtype=dtype,
                                                     attn_implementation=attention)
    return model.cuda().eval()


def hf_logits(model, ids):
    rows = []
    with torch.no_grad():
        x = torch.tensor([ids[:PROMPT_TOKENS]], device="cuda")
        out = model(x, use_cache=True)
        rows.append(out.logits[0].float().cpu())
        cache = out.past_key_values
        for t in range(PROMPT_TOKENS, len(ids)):
            out = model(torch.tensor([[ids[t]]], device="cuda"), past_key_values=cache,
                        use_cache=True)
            cache = out.past_key_values
            rows.append(out.logits[0].float().cpu())
    return torch.cat(rows).numpy().astype(np.float64)


def bf16_ulp(x):
    """One unit in the last place of bf16 (8 significant bits) at |x|."""
    return np.exp2(np.floor(np.log2(np.maximum(np.abs(x), 1e-30))) - 7)


def compare(a, b):
    """a: the run checked, b: the reference. Besides plain argmax agreement, top-1 "within a bf16
    tie": a's pick counts as agreeing when b itself scores it within one bf16 ulp of b's maximum,
    i.e. when a bf16 logit vector (transformers' output is bf16) cannot order the two tokens."""
    dot = (a * b).sum(1)
    cos = dot / np.sqrt((a * a).sum(1) * (b * b).sum(1))
    pick_a, pick_b = a.argmax(1), b.argmax(1)
    top1 = pick_a == pick_b
    rows = np.arange(a.shape[0])
    b_max = b[rows, pick_b]
    gap = b_max - b[rows, pick_a]
    tie = top1 | (gap <= bf16_ulp(b_max))
    rel = np.abs(a - b).max(1) / np.abs(b).max(1)
    return {
        "positions": int(a.shape[0]),
        "cosine_min": float(cos.min()), "cosine_mean": float(cos.mean()),
        "cosine_min_prefill": float(cos[:PROMPT_TOKENS].min()),
        "cosine_min_decode": float(cos[PROMPT_TOKENS:].min()),
        "top1_agreement": float(top1.mean()),
        "top1_disagreements": int((~top1).sum()),
        "top1_agreement_within_bf16_tie": float(tie.mean()),
        "top1_gap_of_disagreements_max": float(gap[~top1].max()) if (~top1).any() else 0.0,
        "max_abs_diff_over_max_abs_logit": float(rel.max()),
    }


def greedy_prompt(binary, ckpt):
    # Every greedy run starts from the engine's prompt ids (BOS + the text), so only the models
    # are compared.
    stdout, _ = run([binary, "tokenize", "--model", ckpt, "--text", GREEDY_PROMPT, "--add-bos",
                     "--format", "json"])
    return json.loads(stdout)["tokens"][0]


def hf_greedy(model, prompt):
    ids = torch.tensor([prompt], device="cuda")
    with torch.no_grad():
        out = model.generate(ids, max_new_tokens=64, min_new_tokens=64, do_sample=False,
                             attention_mask=torch.ones_like(ids))
    return out[0, ids.shape[1]:].tolist()


def engine_greedy(binary, ckpt, device):
    stdout, _ = run([binary, "generate", "--model", ckpt, "--prompt", GREEDY_PROMPT,
                     "--max-tokens", "64", "--temperature", "0", "--device", device,
                     "--format", "json"])
    return json.loads(stdout)


def same_prefix(a, b):
    same = 0
    for x, y in zip(a, b):
        if x != y:
            break
        same += 1
    return same


def greedy(binary, ckpt, model):
    prompt = greedy_prompt(binary, ckpt)
    hf = hf_greedy(model, prompt)
    engine_out = engine_greedy(binary, ckpt, "cuda")
    ours = engine_out["tokens"]
    return {"prompt_tokens": len(prompt), "engine_prompt_tokens": engine_out["prompt_tokens"],
            "hf_tokens": hf, "engine_tokens": ours, "identical_prefix": same_prefix(hf, ours),
            "identical": hf == ours}


def noise_floor(binary, ckpt, ids, ours, ref, greedy_ref=None):
    """What two valid bf16 computations disagree by: transformers with eager attention against
    SDPA, and each bf16 run (transformers', the engine's) against transformers in fp32. With
    greedy_ref (transformers bf16 SDPA's greedy tokens), greedy too: transformers eager against
    SDPA in bf16, and the engine's fp32 CPU reference against transformers in fp32."""
    floor = {}
    prompt = greedy_prompt(binary, ckpt) if greedy_ref is not None else None
    eager_model = load_hf(ckpt, torch.bfloat16, "eager")
    eager = hf_logits(eager_model, ids)
    if prompt is not None:
        tokens = hf_greedy(eager_model, prompt)
        floor["greedy_hf_eager_vs_hf_sdpa_bf16"] = {
            "identical_prefix": same_prefix(tokens, greedy_ref), "hf_eager_tokens": tokens}
    del eager_model
    torch.cuda.empty_cache()
    fp32_model = load_hf(ckpt, torch.float32, "sdpa")
    fp32 = hf_logits(fp32_model, ids)
    if prompt is not None:
        hf32 = hf_greedy(fp32_model, prompt)
        cpu = engine_greedy(binary, ckpt, "cpu")["tokens"]
        floor["greedy_engine_cpu_fp32_vs_hf_fp32"] = {
            "identical_prefix": same_prefix(cpu, hf32), "identical": cpu == hf32,
            "hf_fp32_tokens": hf32, "engine_cpu_tokens": cpu}
    del fp32_model
    torch.cuda.empty_cache()
    floor.update({"hf_eager_vs_hf_sdpa": compare(eager, ref),
                  "engine_vs_hf_eager": compare(ours, eager),
                  "hf_bf16_vs_hf_fp32": compare(ref, fp32), "engine_vs_hf_fp32": compare(ours, fp32)})
    return floor


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("out")
    ap.add_argument("--models", default="llama-3.2-1b,qwen2.5-1.5b,llama-3.2-3b,llama-3-8b")
    ap.add_argument("--work", default="/tmp/inferlab_ckpt")
    ap.add_argument("--noise-floor", default="llama-3.2-1b,llama-3-8b",
                    help="models also run in transformers with eager attention and in fp32")
    args = ap.parse_args()
    import transformers
    result = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__,
              "transformers": transformers.__version__,
              "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
              "method": __doc__.split("\n\n")[1].replace("\n", " "), "models": []}
    for name in args.models.split(","):
        ckpt = os.path.join(args.work, name)
        init_s = 0.0
        if not os.path.exists(os.path.join(ckpt, "config.json")):  # else written beforehand
            _, init_s = run([args.binary, "init-weights", "--model", name, "--out", ckpt,
                             "--seed", "1"])
        cfg = json.load(open(os.path.join(ckpt, "config.json")))
        rng = np.random.default_rng(7)
        ids = rng.integers(0, min(cfg["vocab_size"], 128000), PROMPT_TOKENS + DECODE_STEPS).tolist()
        json.dump(ids, open(os.path.join(ckpt, "ids.json"), "w"))
        t = time.time()
        model = load_hf(ckpt)
        ref = hf_logits(model, ids)
        hf_s = time.time() - t
        entry = {}
        if name == "llama-3.2-1b":
            entry["greedy"] = greedy(args.binary, ckpt, model)
        del model
        torch.cuda.empty_cache()
        npy = os.path.join(ckpt, "engine_logits.npy")
        _, engine_s = run([args.binary, "logits", "--model", ckpt, "--tokens",
                           os.path.join(ckpt, "ids.json"), "--prefill", str(PROMPT_TOKENS),
                           "--out", npy, "--device", "cuda"])
        ours = np.load(npy).astype(np.float64)
        entry.update(compare(ours, ref))
        if name in args.noise_floor.split(","):
            greedy_ref = entry["greedy"]["hf_tokens"] if "greedy" in entry else None
            entry["noise_floor"] = noise_floor(args.binary, ckpt, ids, ours, ref, greedy_ref)
        entry["seconds"] = {"init_weights": init_s, "transformers": hf_s, "engine": engine_s}
        result["models"].append(dict(model=name, **entry))
        print(name, json.dumps({k: v for k, v in entry.items() if k != "greedy"}), flush=True)
        if "greedy" in entry:
            print("greedy identical:", entry["greedy"]["identical"],
                  "prefix", entry["greedy"]["identical_prefix"], flush=True)
            for k, v in entry.get("noise_floor", {}).items():
                if k.startswith("greedy"):
                    print(k, "identical prefix", v["identical_prefix"], flush=True)
        json.dump(result, open(args.out, "w"), indent=1)
        for f in os.listdir(ckpt):
            if f.endswith(".safetensors") or f.endswith(".npy"):
                os.remove(os.path.join(ckpt, f))
    json.dump(result, open(args.out, "w"), indent=1)


if __name__ == "__main__":
    main()
