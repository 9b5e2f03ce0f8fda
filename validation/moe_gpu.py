#!/usr/bin/env python3
"""Mixture of experts on the GPU: the engine's CUDA backend against transformers.

logits: a random Mixtral that transformers builds and saves (bf16 safetensors, seeded; 4
  layers of 1024, 16 heads of 64, 4 KV heads, 8 experts of 3584, top 2, vocab 32000), a
  320-token prompt of random ids then 32 teacher-forced decode steps. transformers runs it in
  fp32 (the reference: the same bf16 weights, fp32 math) and in bf16 (eager experts); `inferlab
  logits --device cuda` runs it (prefill: the experts' GEMM form; decode steps: the expert
  kernels). Per position: cosine of each to the fp32 logits, argmax agreement. The issue's bar:
  the engine's cosine to fp32 within 0.001 of transformers-bf16's. MOE_LOGITS_SEEDS=0,1,...
  repeats it on one random model per seed and pools their rows (MEASUREMENTS §52).
speed: Mixtral 8x7B (random bf16 weights at the real shapes, 93 GB) decode at batch 1 and 32 at a
  1024-token context: `inferlab bench` (device time by CUDA events, mean decode step), and
  transformers' MixtralForCausalLM on the same GPU with a static KV cache, each experts backend
  ("eager", "grouped_mm", "batched_mm") run eagerly, and under torch.compile (mode
  "reduce-overhead": CUDA graphs) where it compiles; median of timed steps by CUDA events. The
  fastest PyTorch figure is the reference.

  MOE_MODEL=qwen3-30b-a3b runs the speed phases on Qwen3-30B-A3B (61 GB) instead; the PyTorch
  model is then transformers' class for the shipped config's model_type.

Usage on the device:  python3 validation/moe_gpu.py logits|speed-engine|speed-torch BUILD/inferlab
                      OUT.json     (MOE_BATCHES=1,32: the decode batches; MOE_MODEL)
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from family_gpu import DECODE, PREFILL, cosines, engine_logits, hf_references, summary  # noqa: E402,E501

# The shipped model the speed phases run (a data/models name): Mixtral 8x7B, or Qwen3-30B-A3B.
MODEL = os.environ.get("MOE_MODEL", "mixtral-8x7b")
CONTEXT, STEPS = 1024, 16


def logits_one(binary, seed):
    """One random Mixtral (torch seed `seed`, prompt ids from rng 7 + seed): the engine's and
    transformers-bf16's cosines to transformers-fp32, row by row."""
    from transformers import MixtralConfig, MixtralForCausalLM
    torch.manual_seed(seed)
    config = MixtralConfig(vocab_size=32000, hidden_size=1024, intermediate_size=3584,
                           num_hidden_layers=4, num_attention_heads=16, num_key_value_heads=4,
                           num_local_experts=8, num_experts_per_tok=2,
                           max_position_embeddings=4096, rms_norm_eps=1e-5, rope_theta=1e6,
                           sliding_window=None, tie_word_embeddings=False)
    model = MixtralForCausalLM(config).to(torch.bfloat16).eval()
    with torch.no_grad():  # init's 0.02 std gives near-uniform routing; widen it to exercise it
        for p in model.parameters():
            if p.dim() == 2:
                p.normal_(0.0, 1.0 / p.shape[1] ** 0.5)
    ids = np.random.default_rng(7 + seed).integers(0, config.vocab_size, PREFILL + DECODE).tolist()
    result = {"seed": seed}
    with tempfile.TemporaryDirectory() as ckpt:
        model.save_pretrained(ckpt, safe_serialization=True)
        del model
        # From the folder, as a user loads it (family_gpu.hf_references: a model cast with
        # .to(bfloat16) carries bf16-rounded RoPE frequencies; the logits of
        # validation/data/moe_h200_2026-11-28/call1..7 were measured against such a model).
        bf16, fp32, result["rotary_buffers"] = hf_references(ckpt, ids)
        t = time.time()
        ours, error = engine_logits(binary, ckpt, ids, "cuda")
        if ours is None:
            sys.exit(error)
        result["engine_wall_s"] = time.time() - t
    for name, logits in (("engine", ours), ("transformers_bf16", bf16)):
        result[name] = summary(logits, fp32)
    result["engine_vs_transformers_bf16_min_cosine"] = float(cosines(ours, bf16).min())
    result["bar_met"] = (result["engine"]["min_cosine"]
                         >= result["transformers_bf16"]["min_cosine"] - 0.001)
    return result, cosines(ours, fp32), cosines(bf16, fp32)


def logits_check(binary, out):
    """MOE_LOGITS_SEEDS (default 0): one random model each; seed 0 is the model of §48-§51. The
    rows of every seed pooled: mean, 1st percentile and minimum of each side's cosines, and the
    bar on them. The top level repeats the first seed's figures (its "seed" says which)."""
    seeds = sorted({int(s) for s in os.environ.get("MOE_LOGITS_SEEDS", "0").split(",") if s})
    if not seeds:
        sys.exit("MOE_LOGITS_SEEDS names no seed")
    result = {"config": {"hidden": 1024, "layers": 4, "experts": 8, "top_k": 2,
                         "intermediate": 3584, "vocab": 32000},
              "prefill": PREFILL, "decode": DECODE, "seeds": []}
    pooled = {"engine": [], "transformers_bf16": []}
    for seed in seeds:
        one, ours, theirs = logits_one(binary, seed)
        result["seeds"].append(one)
        pooled["engine"].append(ours)
        pooled["transformers_bf16"].append(theirs)
        print(json.dumps(one), flush=True)
        json.dump(result, open(out, "w"), indent=1)
    result |= result["seeds"][0]  # the first seed's figures at the top level, as before seeds
    result["pooled"] = {}
    for name, rows in pooled.items():
        c = np.concatenate(rows)
        result["pooled"][name] = {"rows": int(c.size), "mean_cosine": float(c.mean()),
                                  "p1_cosine": float(np.percentile(c, 1)),
                                  "min_cosine": float(c.min()),
                                  "rows_below_0.999": int((c < 0.999).sum())}
    result["seeds_bar_met"] = sum(1 for s in result["seeds"] if s["bar_met"])
    result["pooled_bar_met"] = {
        stat: result["pooled"]["engine"][stat]
        >= result["pooled"]["transformers_bf16"][stat] - 0.001
        for stat in ("mean_cosine", "min_cosine")}
    print(json.dumps(result["pooled"], indent=1))
    json.dump(result, open(out, "w"), indent=1)


def engine_speed(binary, out, batches=(1, 32)):
    rows = []
    for batch in batches:
        cmd = [binary, "bench", "--model", MODEL, "--device", "cuda", "--format", "json",
               "--batch", str(batch), "--input", str(CONTEXT), "--output", str(STEPS + 1),
               "--repeats", "1", "--compare"] + os.environ.get("MOE_BENCH_EXTRA", "").split()
        t = time.time()
        r = subprocess.run(cmd, capture_output=True, text=True)
        row = {"batch": batch, "cmd": " ".join(cmd), "rc": r.returncode,
               "wall_s": time.time() - t}
        if r.returncode == 0:
            row["bench"] = json.loads(r.stdout)
        else:
            row["stderr"] = r.stderr[-4000:]
        print(json.dumps({k: v for k, v in row.items() if k != "bench"}), flush=True)
        rows.append(row)
    json.dump(rows, open(out, "w"), indent=1)


def torch_speed(out, batches=(1, 32)):
    # The shipped config (data/models/MODEL.json) as transformers' own config class reads it.
    from transformers import AutoConfig, AutoModelForCausalLM
    here = os.path.dirname(os.path.abspath(__file__))
    shipped = json.load(open(os.path.join(here, "..", "data", "models", MODEL + ".json")))
    config = AutoConfig.for_model(shipped.pop("model_type"), **shipped)
    torch.set_default_dtype(torch.bfloat16)
    t = time.time()
    with torch.device("cuda"):
        model = AutoModelForCausalLM.from_config(config).eval()
    torch.set_default_dtype(torch.float32)
    result = {"model": MODEL, "torch": torch.__version__, "init_s": time.time() - t, "rows": []}
    import transformers
    result["transformers"] = transformers.__version__
    budget_end = time.time() + float(os.environ.get("MOE_TORCH_BUDGET_S", "420"))
    for backend in os.environ.get("MOE_TORCH_BACKENDS", "grouped_mm,eager,batched_mm").split(","):
        try:
            model.set_experts_implementation(backend)
        except Exception as e:  # noqa: BLE001
            try:
                model.config._experts_implementation = backend
            except Exception:  # noqa: BLE001
                result["rows"].append({"experts": backend, "error": f"set: {e}"[:300]})
                continue
        # MOE_TORCH_COMPILED_ONLY=1: torch.compile alone (the reference; eager is slower).
        for compiled in (True,) if os.environ.get("MOE_TORCH_COMPILED_ONLY") else (False, True):
            for batch in batches:
                if time.time() > budget_end:
                    result["rows"].append({"experts": backend, "compiled": compiled,
                                           "batch": batch, "error": "time budget"})
                    continue
                row = {"experts": backend, "compiled": compiled, "batch": batch}
                try:
                    row.update(time_decode(model, config, batch, compiled))
                except Exception as e:  # noqa: BLE001
                    row["error"] = f"{type(e).__name__}: {e}"[:500]
                    torch._dynamo.reset()
                print(json.dumps(row), flush=True)
                result["rows"].append(row)
                json.dump(result, open(out, "w"), indent=1)  # a timed-out call keeps its rows
                torch.cuda.empty_cache()
    ok = [r for r in result["rows"] if "median_ms" in r]
    for batch in batches:
        best = [r for r in ok if r["batch"] == batch]
        if best:
            result[f"best_b{batch}"] = min(best, key=lambda r: r["median_ms"])
    json.dump(result, open(out, "w"), indent=1)


def time_decode(model, config, batch, compiled):
    from transformers import StaticCache
    cache = StaticCache(config=config, max_cache_len=CONTEXT + STEPS + 8)
    ids = torch.randint(0, config.vocab_size, (batch, CONTEXT), device="cuda")
    t = time.time()
    with torch.no_grad():
        model(ids, past_key_values=cache, use_cache=True,
              cache_position=torch.arange(CONTEXT, device="cuda"))
    prefill_s = time.time() - t
    step = model.forward
    if compiled:
        step = torch.compile(model.forward, mode="reduce-overhead", fullgraph=False)
    token = torch.randint(0, config.vocab_size, (batch, 1), device="cuda")
    times = []
    t = time.time()
    with torch.no_grad():
        for i in range(STEPS + 4):
            pos = torch.tensor([CONTEXT + min(i, STEPS - 1)], device="cuda")
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            step(token, past_key_values=cache, use_cache=True, cache_position=pos)
            end.record()
            end.synchronize()
            if i >= 4:  # compilation and graph capture in the first steps
                times.append(start.elapsed_time(end))
    return {"median_ms": statistics.median(times), "min_ms": min(times), "max_ms": max(times),
            "steps": len(times), "prefill_s": prefill_s, "first_steps_s": time.time() - t}


def main():
    phase, out = sys.argv[1], sys.argv[-1]
    if phase == "logits":
        return logits_check(sys.argv[2], out)
    batches = tuple(int(b) for b in os.environ.get("MOE_BATCHES", "1,32").split(","))
    if phase == "speed-engine":
        engine_speed(sys.argv[2], out, batches)
    elif phase == "speed-torch":
        torch_speed(out, batches)
    else:
        sys.exit(f"unknown phase {phase}")


if __name__ == "__main__":
    main()
