#!/usr/bin/env python3
"""The ablation table of docs/engine.md (the staircase) from the engine profiles of one model and
device.

For each switch combination (one `bench --profile` file): the prefill of 1 x 1024 tokens and
the decode step at batch 1, context 1024 (medians of the profile's repeats), the decode step's
achieved HBM bandwidth (the bytes its kernels move over its time, against the probe's measured
HBM read bandwidth), the prefill's FLOP rate against the dense peak of its GEMM format, and
`predict --framework inferlab`'s figure for the same point from `inferlab validate --engine
--cases` (the calibrated model; whether the point was in the fit split or held out is shown).

Usage: python3 validation/ablation_table.py BUILD/inferlab OUT.json PROFILE.json...
"""
import json
import subprocess
import sys

ORDER = [  # (file tag, row label)
    ("plain_naive", "plain: cuBLASLt projections, naive attention, eager"),
    ("flash", "+ flash attention (split-K decode, tiled prefill)"),
    ("gemv", "+ GEMV kernels for decode projections"),
    ("fused", "+ fused decode (norm, SiLU×mul, residual in the GEMVs)"),
    ("graphs", "+ CUDA graphs for decode steps (all bf16 optimizations)"),
    ("kv_fp8", "  with an fp8 KV cache"),
    ("kv_int8", "  with an int8 KV cache"),
    ("w_fp8", "  with fp8 weights (fp8 tensor cores in prefill)"),
    ("w_int8", "  with int8 weights (W8A16)"),
    ("w_int4", "  with int4 weights (GPTQ g128, W4A16)"),
    ("w8a8", "  with W8A8 int8 (SmoothQuant)"),
    ("w_int4_kv_fp8", "  with int4 weights and an fp8 KV cache"),
]


def tag_of(path):
    name = path.rsplit("/", 1)[-1]
    for tag, _ in sorted(ORDER, key=lambda t: -len(t[0])):
        if f"_{tag}_" in name:
            return tag
    return None


def main():
    binary, out, files = sys.argv[1], sys.argv[2], sys.argv[3:]
    cases = json.loads(subprocess.run(
        [binary, "validate", "--engine", "--split", "all", "--cases", "--format", "json",
         "--data"] + files, capture_output=True, text=True, check=True).stdout)["steps"]
    probe = json.load(open("data/profiles/h200.json"))
    hbm_read_bps = probe["memory"]["hbm"]["read_bps"]
    peaks = json.load(open("data/engine_costs/h200.json"))["ceilings"]["matrix_flops_per_s"]
    rows = []
    for tag, label in ORDER:
        path = next(f for f in files if tag_of(f) == tag)
        profile = json.load(open(path))
        sw = profile["switches"]
        pre = next(p for p in profile["points"]
                   if p["phase"] == "prefill" and p["batch"] == 1 and p["tokens"] == 1024)
        dec = next(p for p in profile["points"]
                   if p["phase"] == "decode" and p["batch"] == 1 and p["context"] == 1024)

        def predicted(phase, name):
            c = next(c for c in cases if c["file"] == path and c["phase"] == phase and
                     c["case"].endswith(name))
            return c["predicted_ms"], c["split"]

        p_pre, s_pre = predicted("prefill", "prefill b1 t1024")
        p_dec, s_dec = predicted("decode", "decode b1 ctx1024")
        dec_bytes = sum(k["bytes"] for k in dec["kernels"])
        pre_flops = sum(k["flops"] for k in pre["kernels"])
        gemm = "fp8" if sw["weights"] == "fp8" else ("int8" if sw["activations"] == "int8"
                                                     else "bf16")
        rows.append({
            "step": label, "switches": sw,
            "prefill_ms": pre["step_ms"], "prefill_min_ms": pre["step_min_ms"],
            "prefill_max_ms": pre["step_max_ms"], "predicted_prefill_ms": p_pre,
            "prefill_split": s_pre,
            "decode_ms": dec["step_ms"], "decode_min_ms": dec["step_min_ms"],
            "decode_max_ms": dec["step_max_ms"], "predicted_decode_ms": p_dec,
            "decode_split": s_dec,
            "decode_bytes": dec_bytes,
            "decode_of_hbm_read": (dec_bytes / (dec["step_ms"] * 1e-3) / hbm_read_bps
                                   if hbm_read_bps else None),
            "prefill_gemm_dtype": gemm,
            "prefill_of_peak": pre_flops / (pre["step_ms"] * 1e-3) / peaks[gemm],
        })
    json.dump({"model": profile["model"], "device_name": profile["device_name"],
               "measured_at": profile["measured_at"], "rows": rows}, open(out, "w"), indent=1)
    print(f"| step | prefill 1024 ms | predicted | of peak | decode ms | predicted | of HBM |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        mark = lambda s: "" if s == "fit" else " (held out)"
        print(f"| {r['step'].strip()} | {r['prefill_ms']:.2f} | {r['predicted_prefill_ms']:.2f}"
              f"{mark(r['prefill_split'])} | {100 * r['prefill_of_peak']:.0f}% "
              f"({r['prefill_gemm_dtype']}) | {r['decode_ms']:.3f} | {r['predicted_decode_ms']:.3f}"
              f"{mark(r['decode_split'])} | "
              + (f"{100 * r['decode_of_hbm_read']:.0f}% |" if r["decode_of_hbm_read"] else "– |"))


if __name__ == "__main__":
    main()
