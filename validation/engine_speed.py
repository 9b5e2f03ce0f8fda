#!/usr/bin/env python3
"""The engine's speed beside PyTorch with CUDA graphs, same session, same GPU.

PyTorch: torch_reference.py's PlainLlama (plain PyTorch ops, static KV cache, SDPA with GQA,
random bf16 weights at the real shapes), each step captured in a CUDA graph and replayed;
median of repeats by CUDA events. Engine: `inferlab bench` on the same shapes (random weights
drawn at the shipped model's shapes), device time by CUDA events, median prefill and mean
decode step. Decode at batch B and context C: PyTorch one step at context C; the engine's
mean over 32 steps at contexts C+1 .. C+32 (8 until 2026-11-29: at batch 64 the first steps
after the 65k-token prefill ran ~5% slower than the later ones, MEASUREMENTS section 60).

Usage on the device:  python3 validation/engine_speed.py BUILD/inferlab $OUT/engine_speed.json
                      [MODELS] [PHASE:BATCH]
INFERLAB_BENCH_EXTRA adds options to every bench (e.g. "--cuda-graphs on").
ENGINE_SPEED_CASES=MODEL:PHASE:BATCH:N,... replaces MODELS x CASES (issue 38's table:
  llama-3.2-1b:decode:1:1024,llama-3-8b:decode:1:1024,llama-3-8b:decode:64:1024,
  llama-3-8b:prefill:1:2048).
ENGINE_SPEED_COMPILE=1 adds torch.compile in gpt-fast's recipe (gpt_fast_reference.py) as the
  column "torch_compile" and the ratio "engine_over_torch_compile".
ENGINE_SPEED_ENGINE_ONLY=WEIGHTS,... adds engine-only rows with --weights W (e.g. int4,fp8) for
  each decode case at batch 1, beside the bf16 references of the same case.
"""
import json
import os
import subprocess
import sys
import time

CASES = [  # (phase, batch, tokens or context)
    ("prefill", 1, 512), ("prefill", 1, 2048), ("decode", 1, 1024), ("decode", 64, 1024)]
MODELS = ["llama-3.2-1b", "llama-3.2-3b", "llama-3-8b"]


def engine(binary, model, phase, batch, n, extra=()):
    if phase == "prefill":
        args = ["--batch", str(batch), "--input", str(n), "--output", "1", "--repeats", "10"]
    else:
        args = ["--batch", str(batch), "--input", str(n), "--output", "33", "--repeats", "1"]
    # --no-kernels: the per-kernel passes (after the timed ones) are not used here.
    cmd = [binary, "bench", "--model", model, "--device", "cuda", "--format", "json",
           "--compare", "--no-kernels"] + args + os.environ.get("INFERLAB_BENCH_EXTRA", "").split() + list(extra)
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        return {"error": r.stderr.strip()[-2000:]}
    return json.loads(r.stdout)


def main():
    binary, out = sys.argv[1], sys.argv[2]
    only = sys.argv[3].split(",") if len(sys.argv) > 3 and sys.argv[3] else MODELS
    cases = CASES
    if len(sys.argv) > 4:  # e.g. "decode:64" runs only the decode cases at batch 64
        phase, batch = sys.argv[4].split(":")
        cases = [c for c in CASES if c[0] == phase and c[1] == int(batch)]
    plan = [(m, c) for m in only for c in cases]
    if os.environ.get("ENGINE_SPEED_CASES"):
        plan = []
        for item in os.environ["ENGINE_SPEED_CASES"].split(","):
            model, phase, batch, n = item.split(":")
            plan.append((model, (phase, int(batch), int(n))))
        only = list(dict.fromkeys(m for m, _ in plan))
    quantized = [w for w in os.environ.get("ENGINE_SPEED_ENGINE_ONLY", "").split(",") if w]
    result = {"measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
              "method": __doc__.split("\n\n")[1].replace("\n", " "), "rows": []}
    for model, (phase, batch, n) in plan:  # the engine first: it takes the GPU's memory per run
        e = engine(binary, model, phase, batch, n)
        row = {"model": model, "phase": phase, "batch": batch,
               "tokens" if phase == "prefill" else "context": n, "engine": e}
        for weights in quantized if phase == "decode" and batch == 1 else []:
            q = engine(binary, model, phase, batch, n, ["--weights", weights])
            row["engine_" + weights] = q
            print(model, phase, batch, n, "engine", weights, q.get("tpot_ms"), flush=True)
        result["rows"].append(row)
        json.dump(result, open(out, "w"), indent=1)
        print(model, phase, batch, n, "engine",
              e.get("prefill_ms") if phase == "prefill" else e.get("tpot_ms"), flush=True)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import torch
    import torch_reference as tr
    result["device"] = torch.cuda.get_device_name(0)
    result["torch"] = torch.__version__
    for model in only:
        cfg = tr.load_config(model)
        m = tr.PlainLlama(cfg, max_batch=64, max_seq=2048 + 8)
        with torch.no_grad():
            for row in result["rows"]:
                if row["model"] != model:
                    continue
                b = row["batch"]
                if row["phase"] == "prefill":
                    s = row["tokens"]
                    toks = torch.randint(0, cfg["vocab_size"], (b, s), device="cuda")
                    r = tr.time_step(m, toks, torch.arange(s, device="cuda"), s)
                else:
                    c = row["context"]
                    toks = torch.randint(0, cfg["vocab_size"], (b, 1), device="cuda")
                    r = tr.time_step(m, toks, torch.tensor([c - 1], device="cuda"), c)
                row["pytorch_graph"] = r["graph"]
                row["pytorch_eager"] = r["eager"]
                e = row["engine"]
                mine = e.get("prefill_ms") if row["phase"] == "prefill" else e.get("tpot_ms")
                ref = r["graph"]["median_s"] * 1e3
                row["engine_over_pytorch_graph"] = mine / ref if mine else None
                print(model, row["phase"], b, "pytorch graph", ref, "engine", mine, flush=True)
        del m
        torch.cuda.empty_cache()
        json.dump(result, open(out, "w"), indent=1)
    if os.environ.get("ENGINE_SPEED_COMPILE") == "1":
        compiled(result, out)
    json.dump(result, open(out, "w"), indent=1)


def compiled(result, out):
    """The torch.compile column (gpt-fast's recipe), after every other measurement: Inductor's
    compilations take the CPU, and its caches the GPU's memory."""
    import torch
    import gpt_fast_reference as gf
    import torch_reference as tr
    result["torch_compile_method"] = gf.__doc__.replace("\n", " ")
    for row in result["rows"]:
        cfg = tr.load_config(row["model"])
        try:
            if row["phase"] == "prefill":
                r = gf.time_compiled(cfg, row["batch"], row["tokens"], row["tokens"])
            else:
                r = gf.time_compiled(cfg, row["batch"], 1, row["context"])
        except Exception as err:  # a failed compile is recorded, the other rows still run
            row["torch_compile"] = {"error": repr(err)[-2000:]}
            torch.cuda.empty_cache()
            continue
        row["torch_compile"] = r
        e = row["engine"]
        mine = e.get("prefill_ms") if row["phase"] == "prefill" else e.get("tpot_ms")
        row["engine_over_torch_compile"] = mine / (r["median_s"] * 1e3) if mine else None
        print(row["model"], row["phase"], row["batch"], "torch.compile", r["median_s"] * 1e3,
              "engine", mine, "skips", r["cudagraph_skips"], flush=True)
        json.dump(result, open(out, "w"), indent=1)


if __name__ == "__main__":
    main()
