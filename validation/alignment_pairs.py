#!/usr/bin/env python3
"""F.linear at twin shapes that differ only in how k's rows sit on memory sectors.

cuBLAS runs GEMMs whose k rows do not start on 32-byte sectors (k * 2 bytes not a multiple of
32) more slowly, but the reference's fit split holds such shapes only at widths of their own,
so a fit cannot tell the alignment's cost from the shape's. Here each (m, n, k) is timed at
k, k + 8 (rows 16 bytes off a sector), k + 16 (on sectors, 32 bytes off a 64-byte block) and
k + 32 (64 bytes off a 128-byte line), k a multiple of 64: the twins differ by < 1.3% in work.

Written in the form of gemm_shapes.py (rows under "unaligned_ops", model "alignment", all in
the fit split by torch_reference.split_of; "kernels" as there; "retimed" empty), so that
validation/merge_gemm_shapes.py merges it. "anchors" re-times fit-split unaligned shapes of
the reference (not merged): how far this session's timings sit from the reference's.

Usage on the device:
  python3 validation/alignment_pairs.py $OUT/alignment_pairs.json \
      --reference validation/data/torch_reference_h100_2026-11-22b.json
"""
import os
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gemm_shapes import kernel_table, parse_run_args, run_header, write_run  # noqa: E402
from torch_reference import rand, split_of, time_op  # noqa: E402

PAIR_N = [2304, 5376]
PAIR_K = [2560, 5120]
K_OFFSETS = [0, 8, 16, 32]  # elements: 0, 16, 32 and 64 bytes past a 128-byte line
PAIR_TOKENS = [64, 200, 500, 1000, 2000, 4000]
ANCHOR_NK = [(2600, 1800), (6000, 2888)]  # fit-split unaligned shapes of the reference


def pair_ops():
    rows = []
    for n in PAIR_N:
        for k0 in PAIR_K:
            for dk in K_OFFSETS:
                k = k0 + dk
                w = rand(n, k)
                for m in PAIR_TOKENS:
                    x = rand(m, k)
                    st = time_op(lambda: F.linear(x, w))
                    row = dict(op="linear", model="alignment", proj="twin", m=m, n=n, k=k, **st)
                    row["split"] = split_of(row)
                    rows.append(row)
    return rows


def anchors(reference_ops):
    rows = []
    for row in reference_ops:
        if row["op"] != "linear" or (row["n"], row["k"]) not in ANCHOR_NK:
            continue
        x, w = rand(row["m"], row["k"]), rand(row["n"], row["k"])
        st = time_op(lambda: F.linear(x, w))
        rows.append(dict(m=row["m"], n=row["n"], k=row["k"], reference_median_s=row["median_s"],
                         **st))
    return rows


def main():
    path, reference_path, reference = parse_run_args()
    out = dict(run_header(reference_path, "none (no re-timing in this run)"), retimed=[])
    with torch.no_grad():
        t0 = time.time()
        out["anchors"] = anchors(reference["ops"])
        out["unaligned_ops"] = pair_ops()
        print(f"timed: {time.time() - t0:.1f} s", flush=True)
        out["kernels"] = kernel_table(out["unaligned_ops"])
        print(f"kernels of {len(out['kernels'])} shapes: {time.time() - t0:.1f} s", flush=True)
    write_run(path, out)
    for a in out["anchors"]:
        print("anchor", a["m"], a["n"], a["k"], f"{a['reference_median_s'] * 1e6:.1f} us ->",
              f"{a['median_s'] * 1e6:.1f} us")
    for r in out["unaligned_ops"]:
        print("twin", r["m"], r["n"], r["k"], f"{r['median_s'] * 1e6:.1f} us")


if __name__ == "__main__":
    main()
