#!/usr/bin/env python3
"""Merges a `gemm_shapes.py` run (or an `alignment_pairs.py` run, which has its form) into the
reference file it was run against (same device): appends its F.linear rows ("unaligned_ops",
fit split) to "ops" and replaces each disturbed operator by its re-timing, keeping the first
timing in the row (first_median_s, first_min_s, first_max_s). Running it twice changes nothing.

Usage: python3 validation/merge_gemm_shapes.py RUN.json REFERENCE.json [--alignment-pairs]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from reference_merge import load_same_device, write_merged  # noqa: E402


def shape(row):
    return (row["op"], row.get("m"), row.get("n"), row.get("k"), row.get("model"))


GEMM_SHAPES_NOTE = ("; unaligned linear ops (model 'unaligned', fit split) and re-timings of "
                    "disturbed ops ({rule}): validation/gemm_shapes.py "
                    "(ops_gemm_shapes_measured_at), merged by validation/merge_gemm_shapes.py")
PAIRS_NOTE = ("; twin linear ops at k, k+8, k+16, k+32 (model 'alignment', fit split): "
              "validation/alignment_pairs.py (ops_alignment_pairs_measured_at), merged by "
              "validation/merge_gemm_shapes.py --alignment-pairs")


def main():
    run_path, reference_path = sys.argv[1], sys.argv[2]
    pairs = "--alignment-pairs" in sys.argv[3:]
    run, reference = load_same_device(run_path, reference_path)
    retimed = {shape(r): r for r in run["retimed"]}
    added = {shape(r) for r in run["unaligned_ops"]}
    ops = [retimed.get(shape(r), r) for r in reference["ops"] if shape(r) not in added]
    reference["ops"] = ops + run["unaligned_ops"]
    if pairs:
        write_merged(reference, reference_path, "ops_alignment_pairs_measured_at",
                     run["measured_at"], PAIRS_NOTE)
    else:
        write_merged(reference, reference_path, "ops_gemm_shapes_measured_at", run["measured_at"],
                     GEMM_SHAPES_NOTE.format(rule=run["disturbed_rule"]))


if __name__ == "__main__":
    main()
