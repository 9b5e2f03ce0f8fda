#!/usr/bin/env python3
"""Appends the RoPE operator rows of a `torch_reference.py --only rope_ops` run to a reference
file's "ops" (same device, same script), noting when they were measured.

Usage: python3 validation/merge_rope_ops.py ROPE_RUN.json REFERENCE.json
"""
import json
import sys


def main():
    rope_path, reference_path = sys.argv[1], sys.argv[2]
    with open(rope_path) as f:
        rope = json.load(f)
    with open(reference_path) as f:
        reference = json.load(f)
    if rope["device"]["name"] != reference["device"]["name"]:
        sys.exit(f"error: {rope_path} is from {rope['device']['name']}, "
                 f"{reference_path} from {reference['device']['name']}")
    reference["ops"] = [r for r in reference["ops"] if r["op"] != "rope"] + rope["rope_ops"]
    reference["ops_rope_measured_at"] = rope["measured_at"]
    reference["note"] = reference.get("note", "").rstrip(".") + (
        "; rope ops: a later run of the same script (--only rope_ops, ops_rope_measured_at), "
        "merged by validation/merge_rope_ops.py")
    with open(reference_path, "w") as f:
        json.dump(reference, f, indent=1)


if __name__ == "__main__":
    main()
