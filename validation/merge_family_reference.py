#!/usr/bin/env python3
"""Merges a `family_reference.py` run into the reference file of the same device.

Appends the run's "ops" to the reference's "ops" and its "steps" to "steps", skipping every row
whose shape the reference already holds (the run's same-day controls: Llama steps in
PlainLlama's layout, contiguous SiLU x mul at Llama widths), so that running it twice changes
nothing. With --pending it also appends "ops_pending" to "ops" and "fused_steps" to "steps":
only once `inferlab` reads those op kinds (linear_bias, silu_mul_halves, rope_fused_qkv,
softmax_fp32, softmax_bf16_to_fp32) and a step row's "layout" (fused_qkv_gate_up), since
before that `validate` and `fit` stop at an unknown op kind or price a fused step as an unfused
one. Each row keeps the split the run gave it.

With --only-ops KIND[,KIND] only those op rows are merged and no step (e.g. the softmax grid
into the calibration's fit data, whose other groups then stay as they were).

With --except-ops KIND[,KIND] those op rows stay out (e.g. the fp32 softmax variants, which the
calibrated model does not price apart from bf16 yet: merged, their fit rows would refit the
bf16 softmax's parameters to kernels it does not run; `validate` reads them in the run's file).

Usage: python3 validation/merge_family_reference.py RUN.json REFERENCE.json [--pending]
       [--only-ops softmax] [--except-ops softmax_fp32,softmax_bf16_to_fp32]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from reference_merge import load_same_device, write_merged  # noqa: E402

OP_KEYS = ("op", "m", "n", "k", "tokens", "intermediate", "rows", "cols", "batch", "heads",
           "kv_heads", "head_dim", "seq", "context", "hidden")
STEP_KEYS = ("model", "phase", "batch", "tokens", "context", "layout")


def key_of(row, keys):
    return tuple(row.get(k) for k in keys)


def append_new(existing, rows, keys):
    seen = {key_of(r, keys) for r in existing}
    added = [r for r in rows if key_of(r, keys) not in seen]
    return existing + added, len(added)


def main():
    run_path, reference_path = sys.argv[1], sys.argv[2]
    pending = "--pending" in sys.argv[3:]
    run, reference = load_same_device(run_path, reference_path)
    ops = run["ops"] + (run["ops_pending"] if pending else [])
    steps = run["steps"] + (run["fused_steps"] if pending else [])
    if "--only-ops" in sys.argv[3:]:
        kinds = set(sys.argv[sys.argv.index("--only-ops") + 1].split(","))
        ops = [row for row in ops if row.get("op") in kinds]
        steps = []
    if "--except-ops" in sys.argv[3:]:
        kinds = set(sys.argv[sys.argv.index("--except-ops") + 1].split(","))
        ops = [row for row in ops if row.get("op") not in kinds]
    reference["ops"], n_ops = append_new(reference.get("ops", []), ops, OP_KEYS)
    reference["steps"], n_steps = append_new(reference.get("steps", []), steps, STEP_KEYS)
    write_merged(reference, reference_path, "family_measured_at", run["measured_at"],
                 "; Qwen2.5, Mistral and gpt-fast-layout rows: validation/family_reference.py "
                 "(family_measured_at), merged by validation/merge_family_reference.py")
    print(f"added {n_ops} ops and {n_steps} steps to {reference_path}")


if __name__ == "__main__":
    main()
