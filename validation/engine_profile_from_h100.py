#!/usr/bin/env python3
"""Writes the H100 engine measurements of 2026-11-23 (run 5, docs/MEASUREMENTS.md §19) as engine
profiles (the form `inferlab bench --profile` writes), so that `inferlab fit --engine` and
`inferlab validate --engine` can use them before the engine's own profiling run exists.

Inputs (committed): validation/data/engine_speed_graphs_h100_2026-11-23c.json (CUDA graphs on,
GEMV on: prefill 512 and 2048 with their profiled passes; decode at batch 1 and 64 after a
prefill of 1024 tokens, whose profiled pass is kept as a prefill point; the decode steps were
not profiled, being graph replays) and validation/data/ablation_llama-3-8b_h100_2026-11-23.json
(Llama 3 8B batch 1, input 1024: eager with cuBLASLt, eager with the GEMV kernel, both with a
profiled decode step; and graphs on). It needs that committed speed file: `engine_speed.py` runs
since 2026-11-29 time the engine with `--no-kernels` and hold no kernel breakdown.

Points per file, in grid order (prefill by batch then tokens, then decode by batch), every
third one (index 2, 5, ...) held out, as the bench assigns it. Every switch not in the
measurement is the engine's only choice then: fusion off, flash attention, bf16 everywhere.

    python3 validation/engine_profile_from_h100.py validation/data
"""
import json
import os
import sys

SPEED = "engine_speed_graphs_h100_2026-11-23c.json"
ABLATION = "ablation_llama-3-8b_h100_2026-11-23.json"
# Decode steps timed over contexts 1025..1032 (the speed table) or 1025..1040 (the ablation):
# the middle one stands for them.
SPEED_DECODE_CONTEXT = 1028
ABLATION_DECODE_CONTEXT = 1032


def switches(gemv, graphs):
    return {"gemv": gemv, "fusion": "off", "cuda_graphs": graphs, "attention": "flash",
            "weights": "bf16", "kv": "bf16", "activations": "bf16"}


def kernels_of(rows):
    return [{"kernel": k["kernel"], "ms": k["ms"], "bytes": k["bytes"],
             "flops": k.get("flops", 0.0), "launches": k["launches"]} for k in rows]


def with_split(points):
    for i, p in enumerate(points):
        p["split"] = "holdout" if i % 3 == 2 else "fit"
    return points


def document(model, sw, points, measured_at, source):
    return {"kind": "engine_profile", "model": model, "hardware": "h100-sxm",
            "device_name": "NVIDIA H100 80GB HBM3", "measured_at": measured_at,
            "commit": "run 5, docs/MEASUREMENTS.md section 19", "source": source,
            "switches": sw, "points": with_split(points)}


def speed_profiles(data_dir):
    speed = json.load(open(os.path.join(data_dir, SPEED)))
    by_model = {}
    for row in speed["rows"]:
        e = row["engine"]
        spread = e["spread"]
        pts = by_model.setdefault(row["model"], {"prefill": [], "decode": []})
        tokens = row["tokens"] if row["phase"] == "prefill" else e["input_tokens"]
        pre = spread["prefill"]
        pts["prefill"].append({
            "phase": "prefill", "batch": row["batch"], "tokens": tokens, "context": tokens,
            "step_ms": pre["median_ms"], "step_min_ms": pre["min_ms"], "step_max_ms": pre["max_ms"],
            "repeats": pre["samples"], "kernels": kernels_of(e["kernels"]["prefill"])})
        if row["phase"] == "decode":
            dec = spread["decode_step"]
            pts["decode"].append({
                "phase": "decode", "batch": row["batch"], "tokens": 1,
                "context": SPEED_DECODE_CONTEXT, "step_ms": dec["median_ms"],
                "step_min_ms": dec["min_ms"], "step_max_ms": dec["max_ms"],
                "repeats": dec["samples"], "kernels": []})
    out = {}
    for model, pts in by_model.items():
        prefill = sorted(pts["prefill"], key=lambda p: (p["batch"], p["tokens"]))
        decode = sorted(pts["decode"], key=lambda p: p["batch"])
        out[f"engine_profile_h100_{model}_graphs_2026-11-23.json"] = document(
            model, switches("on", "on"), prefill + decode, speed["measured_at"],
            f"validation/data/{SPEED} (engine rows)")
    return out


def ablation_profiles(data_dir):
    ab = json.load(open(os.path.join(data_dir, ABLATION)))
    out = {}
    names = {(False, False): "cublaslt_eager", (True, False): "gemv_eager", (True, True): "gemv_graphs"}
    for step in ab["steps"]:
        sw = switches("on" if step["gemv"] else "off", "on" if step["cuda_graphs"] else "off")
        points = [
            {"phase": "prefill", "batch": ab["batch"], "tokens": ab["input_tokens"],
             "context": ab["input_tokens"], "step_ms": step["prefill_ms"],
             "step_min_ms": step["prefill_min_ms"], "step_max_ms": step["prefill_max_ms"],
             "repeats": ab["repeats"], "kernels": []},
            {"phase": "decode", "batch": ab["batch"], "tokens": 1,
             "context": ABLATION_DECODE_CONTEXT, "step_ms": step["decode_step_ms"],
             "step_min_ms": step["decode_step_min_ms"], "step_max_ms": step["decode_step_max_ms"],
             "kernels": kernels_of(step["decode_kernels"])},
        ]
        name = names[(step["gemv"], step["cuda_graphs"])]
        out[f"engine_profile_h100_{ab['model']}_ablation_{name}_2026-11-23.json"] = document(
            ab["model"], sw, points, "2026-11-23T20:50:00Z",
            f"validation/data/{ABLATION} ('{step['step']}')")
    return out


def main():
    data_dir = sys.argv[1] if len(sys.argv) > 1 else "validation/data"
    profiles = {**speed_profiles(data_dir), **ablation_profiles(data_dir)}
    for name, doc in sorted(profiles.items()):
        path = os.path.join(data_dir, name)
        with open(path, "w") as f:
            json.dump(doc, f, indent=1)
            f.write("\n")
        print(path)


if __name__ == "__main__":
    main()
