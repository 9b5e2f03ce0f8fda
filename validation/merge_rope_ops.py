#!/usr/bin/env python3
"""Appends the RoPE operator rows of a `torch_reference.py --only rope_ops` run to a reference
file's "ops" (same device, same script), noting when they were measured.

Usage: python3 validation/merge_rope_ops.py ROPE_RUN.json REFERENCE.json
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from reference_merge import load_same_device, write_merged  # noqa: E402


def main():
    rope_path, reference_path = sys.argv[1], sys.argv[2]
    rope, reference = load_same_device(rope_path, reference_path)
    reference["ops"] = [r for r in reference["ops"] if r["op"] != "rope"] + rope["rope_ops"]
    write_merged(reference, reference_path, "ops_rope_measured_at", rope["measured_at"],
                 "; rope ops: a later run of the same script (--only rope_ops, "
                 "ops_rope_measured_at), merged by validation/merge_rope_ops.py")


if __name__ == "__main__":
    main()
