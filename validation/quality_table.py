#!/usr/bin/env python3
"""Issue 37's figures from the files validation/quality_gpu.sh wrote into one folder: the
quantization table (perplexity per format and its change against bf16, GPU on the whole held-out
text and on the CPU's slice, CPU reference on the slice), engine against transformers, the
training rerun, logprobs against transformers, speculation and tensor-parallel greedy tokens.
Writes DIR/quality_summary.json and prints the same as markdown. Missing files leave "-".

usage: python3 validation/quality_table.py DIR > DIR/quality_table.md
"""
import json
import os
import sys

# name, what it is, goal: largest perplexity increase over bf16 in percent (None: no goal)
FORMATS = [
    ("bf16", "bf16 weights and KV (reference)", None),
    ("int8", "int8 weights, per channel (`--weights int8`)", 1.0),
    ("fp8", "fp8 E4M3 weights (`--weights fp8`)", 1.0),
    ("int4", "int4 group-128 RTN at load (`--weights int4`)", None),
    ("int4_rtn", "int4 group-128 RTN, `quantize` checkpoint", None),
    ("int4_gptq", "int4 group-128 GPTQ, `quantize --calibration`", 4.0),
    ("w8a8", "W8A8 SmoothQuant (`--weights int8 --activations int8`)", None),
    ("kv_fp8", "KV cache fp8 (`--kv fp8`)", 0.5),
    ("kv_int8", "KV cache int8 (`--kv int8`)", 0.5),
]


def load(folder, name):
    try:
        with open(os.path.join(folder, name)) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def text(folder, name):
    try:
        with open(os.path.join(folder, name)) as f:
            return f.read().strip()
    except OSError:
        return None


def ppl(folder, name):
    d = load(folder, name)
    return d.get("perplexity") if isinstance(d, dict) else None


def pct(a, b):
    return 100.0 * (a / b - 1.0) if a is not None and b else None


def fmt(x, digits=3):
    if x is None:
        return "-"
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, float):
        return "%.*f" % (digits, x)
    return str(x)


def signed(x):
    return "-" if x is None else "%+.2f%%" % x


def main():
    folder = sys.argv[1]
    s = {"gpu": text(folder, "gpu.txt"), "versions": text(folder, "versions.txt"),
         "date": text(folder, "date.txt"), "texts": load(folder, "texts.json")}

    train = {}
    for name in ("target", "target_rerun", "draft"):
        d = load(folder, "train_stats_%s.json" % name)
        if d:
            train[name] = {k: d.get(k) for k in ("role", "parameters", "steps", "seconds",
                                                 "tokens_seen", "train_bytes", "train_files",
                                                 "heldout_files", "train_tokens", "seed", "roots",
                                                 "steps_source")}
            train[name]["final_loss"] = d["losses"][-1][1] if d.get("losses") else None
    s["train"] = train

    tf_target = ppl(folder, "ppl_transformers_full_target.json")
    tf_rerun = ppl(folder, "ppl_transformers_full_target_rerun.json")
    s["reproduction"] = {"transformers_ppl_target": tf_target, "transformers_ppl_rerun": tf_rerun,
                         "rerun_over_target": tf_rerun / tf_target if tf_rerun and tf_target else None}
    s["reproduction"]["within_1pct"] = (abs(s["reproduction"]["rerun_over_target"] - 1) <= 0.01
                                        if s["reproduction"]["rerun_over_target"] else None)

    rows = []
    base = {key: ppl(folder, "ppl_%s_bf16.json" % key) for key in ("gpu_full", "gpu_slice",
                                                                  "cpu_slice")}
    for name, what, goal in FORMATS:
        row = {"format": name, "what": what, "goal_max_increase_pct": goal}
        for key in ("gpu_full", "gpu_slice", "cpu_slice"):
            value = ppl(folder, "ppl_%s_%s.json" % (key, name))
            row[key] = value
            row[key + "_delta_pct"] = pct(value, base[key]) if name != "bf16" else None
        if goal is not None and row["gpu_full_delta_pct"] is not None:
            row["goal_met_gpu"] = row["gpu_full_delta_pct"] <= goal
        if goal is not None and row["cpu_slice_delta_pct"] is not None:
            row["goal_met_cpu"] = row["cpu_slice_delta_pct"] <= goal
        rows.append(row)
    by = {r["format"]: r for r in rows}
    for key in ("gpu_full", "cpu_slice"):
        g, r = by["int4_gptq"][key], by["int4_rtn"][key]
        if g is not None and r is not None:
            by["int4_gptq"]["better_than_rtn_" + key] = g < r
    s["quantization"] = rows
    gptq = load(folder, "quantize_int4_gptq.json")
    s["gptq"] = {"calibration_tokens": gptq.get("calibration_tokens") if gptq else None,
                 "seconds": text(folder, "quantize_int4_gptq_seconds.txt")}

    engine_full = base["gpu_full"]
    tf_slice = ppl(folder, "ppl_transformers_slice_target.json")
    s["engine_vs_transformers"] = {
        "engine_gpu_bf16_full": engine_full, "transformers_full": tf_target,
        "ratio_full": engine_full / tf_target if engine_full and tf_target else None,
        "engine_gpu_bf16_slice": base["gpu_slice"], "engine_cpu_fp32_slice": base["cpu_slice"],
        "transformers_slice": tf_slice,
        "ratio_slice_gpu": base["gpu_slice"] / tf_slice if base["gpu_slice"] and tf_slice else None,
        "ratio_slice_cpu": base["cpu_slice"] / tf_slice if base["cpu_slice"] and tf_slice else None,
    }
    r = s["engine_vs_transformers"]["ratio_full"]
    s["engine_vs_transformers"]["within_0_1pct"] = abs(r - 1) <= 0.001 if r else None
    tokens = {key: (load(folder, "ppl_%s_bf16.json" % key) or {}).get("tokens")
              for key in ("gpu_full", "gpu_slice", "cpu_slice")}
    s["engine_vs_transformers"]["tokens"] = tokens

    s["logprobs"] = load(folder, "logprobs_compare.json")
    s["speculation"] = load(folder, "speculation.json")
    s["tensor_parallel"] = load(folder, "tp_greedy.json")
    with open(os.path.join(folder, "quality_summary.json"), "w") as f:
        json.dump(s, f, indent=1)

    p = print
    p("# Issue 37: quality of a model trained here\n")
    gpus = (s["gpu"] or "-").splitlines()
    p("GPUs: %d × %s; %s; %s\n" % (len(gpus), gpus[0], (s["versions"] or "").replace("\n", "; "),
                                   s["date"]))
    if train:
        p("| model | parameters | steps | s | tokens seen | final train loss | train bytes |")
        p("|---|---|---|---|---|---|---|")
        for name, t in train.items():
            p("| %s | %s | %s | %s | %s | %s | %s |" % (
                name, fmt(t["parameters"]), fmt(t["steps"]), fmt(t["seconds"], 0),
                fmt(t["tokens_seen"]), fmt(t["final_loss"]), fmt(t["train_bytes"])))
        p("")
    rep = s["reproduction"]
    p("Rerun (same seed and steps): transformers held-out perplexity %s vs %s, ratio %s "
      "(within 1%%: %s)\n" % (fmt(rep["transformers_ppl_target"]), fmt(rep["transformers_ppl_rerun"]),
                              fmt(rep["rerun_over_target"], 5), fmt(rep["within_1pct"])))
    ev = s["engine_vs_transformers"]
    p("Engine vs transformers (bf16, context %s stride %s): held-out %s vs %s, ratio %s "
      "(within 0.1%%: %s); slice: engine GPU %s, engine CPU fp32 %s, transformers %s\n" % (
          "1024", "512", fmt(ev["engine_gpu_bf16_full"]), fmt(ev["transformers_full"]),
          fmt(ev["ratio_full"], 5), fmt(ev["within_0_1pct"]), fmt(ev["engine_gpu_bf16_slice"]),
          fmt(ev["engine_cpu_fp32_slice"]), fmt(ev["transformers_slice"])))
    p("Scored tokens: GPU held-out %s, slice %s (GPU), %s (CPU).\n" % (
        fmt(tokens["gpu_full"]), fmt(tokens["gpu_slice"]), fmt(tokens["cpu_slice"])))
    p("| format | GPU held-out ppl | Δ vs bf16 | GPU slice ppl | Δ | CPU slice ppl | Δ | goal | met (GPU / CPU) |")
    p("|---|---|---|---|---|---|---|---|---|")
    for row in rows:
        goal = "≤ +%.1f%%" % row["goal_max_increase_pct"] if row["goal_max_increase_pct"] else "-"
        if row["format"] == "int4_gptq":
            goal += ", < RTN"
        met = "%s / %s" % (fmt(row.get("goal_met_gpu")), fmt(row.get("goal_met_cpu")))
        if row["format"] == "int4_gptq":
            met += "; < RTN %s / %s" % (fmt(row.get("better_than_rtn_gpu_full")),
                                        fmt(row.get("better_than_rtn_cpu_slice")))
        p("| %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            row["what"], fmt(row["gpu_full"]), signed(row["gpu_full_delta_pct"]),
            fmt(row["gpu_slice"]), signed(row["gpu_slice_delta_pct"]), fmt(row["cpu_slice"]),
            signed(row["cpu_slice_delta_pct"]), goal, met if row["goal_max_increase_pct"] else "-"))
    p("\nGPTQ: %s calibration tokens, %s s on the CPU.\n" % (fmt(s["gptq"]["calibration_tokens"]),
                                                          fmt(s["gptq"]["seconds"])))
    lp = s["logprobs"]
    if lp:
        p("Logprobs (server echo, %d positions in %d snippets) vs transformers: max |Δ| %.4f, "
          "mean |Δ| %.5f, p99 %.4f; top-1 agreement %.3f, top-3 set agreement %.3f\n" % (
              lp["positions"], lp["snippets"], lp["max_abs_diff"], lp["mean_abs_diff"],
              lp["p99_abs_diff"], lp["top1_agreement"], lp["top3_set_agreement"]))
    sp = s["speculation"]
    if sp:
        p("| speculation (batch 1, %s prompts, %s new tokens) | ms / decode token | measured "
          "speed-up | vs warm plain | acceptance | alpha | simulator speed-up | formula speed-up "
          "| greedy = plain |" % (sp.get("prompts"), sp.get("new_tokens")))
        p("|---|---|---|---|---|---|---|---|---|")
        rows = [(mode, m) for mode, m in sp.get("modes", {}).items()]
        rows += [("%s, warm" % mode, m) for mode, m in sp.get("warm_modes", {}).items()]
        for mode, m in rows:
            p("| %s | %s | %s | %s | %s | %s | %s | %s | %s/%s |" % (
                mode, fmt(m.get("decode_ms_per_token")), fmt(m.get("measured_speedup")),
                fmt(m.get("measured_speedup_vs_warm_plain")),
                fmt(m.get("acceptance")), fmt(m.get("alpha")), fmt(m.get("simulator_speedup")),
                fmt((m.get("formula") or {}).get("speedup")), m.get("tokens_equal_plain"),
                m.get("compared_prompts")))
        pair = sp.get("plain_tpot_ms_measured_vs_simulated")
        if pair:
            p("\nPlain decoding at batch 1: %.4f ms a token measured (generate, one process a prompt), "
              "%.4f ms simulated (`serve`, --framework inferlab, %s)." % (pair[0], pair[1],
                                                                        sp.get("hardware")))
        pair = sp.get("plain_tpot_ms_warm_vs_simulated")
        if pair:
            p("Warm (`generate --warmup-runs 1`: graphs and plans made before the timed run): "
              "%.4f ms a token measured, %.4f ms simulated." % (pair[0], pair[1]))
        p("")
    tp = s["tensor_parallel"]
    if tp:
        p("Tensor parallel 2 vs 1 GPU, greedy: %s of 48 first-16 tokens equal (%s)\n" % (
            tp.get("equal_of_first_16_total"),
            ", ".join("prompt %s: %s" % (r["prompt"], r.get("equal_of_first_16", r.get("error")))
                      for r in tp.get("prompts", []))))


if __name__ == "__main__":
    main()
