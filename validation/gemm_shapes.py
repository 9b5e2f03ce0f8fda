#!/usr/bin/env python3
"""GEMM shapes the reference lacked, the kernels cuBLAS picks, and re-timing of disturbed ops.

Three parts, one run, written to one JSON file (argv[1]):
  * "unaligned_ops": F.linear at shapes whose n and k are multiples of 8 but not of 64
    (what odd model widths give), timed exactly as torch_reference.py times its operators,
    all in the *fit* split. The reference's fit split had only power-of-two-ish widths; its
    held-out "odd" shapes are not among these and are not re-measured.
  * "kernels": the CUDA kernels one F.linear call launches (torch.profiler), for every linear
    shape of the reference file and of the unaligned grid: which cuBLAS kernel family
    (nvjet tile and cluster, split-K, other) runs each shape.
  * "retimed": every operator of the reference file whose median is more than twice its
    minimum (a run disturbed while the events were open) is timed again the same way. The
    rule looks at the spread of the measurement only, never at a prediction.

Usage on the device:
  python3 validation/gemm_shapes.py $OUT/gemm_shapes.json \
      --reference validation/data/torch_reference_h100_2026-11-22b.json
"""
import argparse
import collections
import json
import os
import sys
import time

import torch
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_reference import rand, time_op  # noqa: E402

# (n, k) pairs: multiples of 8, not of 64, none equal to a held-out "odd" shape.
UNALIGNED_NK = [(1400, 5000), (2600, 1800), (6000, 2888), (9000, 6200), (4000, 4000)]
UNALIGNED_TOKENS = [2, 16, 40, 160, 500, 1200, 2500, 5000]
DISTURBED_SPREAD = 2.0  # median over minimum beyond which a timing is re-taken


def linear_kernels(m, n, k):
    x, w = rand(m, k), rand(n, k)
    F.linear(x, w)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        F.linear(x, w)
        torch.cuda.synchronize()
    names = collections.Counter(e.name for e in prof.events()
                                if e.device_type == torch.autograd.DeviceType.CUDA)
    return dict(names)


def unaligned_ops():
    rows = []
    for n, k in UNALIGNED_NK:
        w = rand(n, k)
        for m in UNALIGNED_TOKENS:
            x = rand(m, k)
            st = time_op(lambda: F.linear(x, w))
            rows.append(dict(op="linear", model="unaligned", proj="synthetic", m=m, n=n, k=k,
                             split="fit", **st))
    return rows


def retime(reference_ops):
    rows = []
    for row in reference_ops:
        if row["op"] != "linear" or row["median_s"] <= DISTURBED_SPREAD * row["min_s"]:
            continue
        x, w = rand(row["m"], row["k"]), rand(row["n"], row["k"])
        st = time_op(lambda: F.linear(x, w))
        rows.append(dict(row, **st, first_median_s=row["median_s"], first_min_s=row["min_s"],
                         first_max_s=row["max_s"]))
    return rows


def parse_run_args():
    """(output path, reference path, the reference) from the command line."""
    ap = argparse.ArgumentParser()
    ap.add_argument("path")
    ap.add_argument("--reference", required=True)
    args = ap.parse_args()
    with open(args.reference) as f:
        return args.path, args.reference, json.load(f)


def run_header(reference_path, disturbed_rule):
    """The device, time and method of a run of F.linear timings against a reference file."""
    torch.manual_seed(0)
    p = torch.cuda.get_device_properties(0)
    return {"device": {"name": p.name, "sm_count": p.multi_processor_count,
                       "torch": torch.__version__, "cuda": torch.version.cuda},
            "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "reference": reference_path,
            "method": "as torch_reference.py: CUDA events around each call; median of 25; L2 "
                      "flushed before each timed call; kernels from torch.profiler, one call",
            "disturbed_rule": disturbed_rule}


def kernel_table(rows):
    """The kernels one call launches, for each distinct F.linear shape among `rows`."""
    shapes = sorted({(r["m"], r["n"], r["k"]) for r in rows if r["op"] == "linear"})
    return [dict(m=m, n=n, k=k, kernels=linear_kernels(m, n, k)) for m, n, k in shapes]


def write_run(path, out):
    with open(path, "w") as f:
        json.dump(out, f, indent=1)


def main():
    path, reference_path, reference = parse_run_args()
    out = run_header(reference_path, f"median_s > {DISTURBED_SPREAD} x min_s (linear ops)")
    with torch.no_grad():
        t0 = time.time()
        out["retimed"] = retime(reference["ops"])
        out["unaligned_ops"] = unaligned_ops()
        print(f"timed: {time.time() - t0:.1f} s", flush=True)
        out["kernels"] = kernel_table(reference["ops"] + out["unaligned_ops"])
        print(f"kernels of {len(out['kernels'])} shapes: {time.time() - t0:.1f} s", flush=True)
    write_run(path, out)
    for r in out["retimed"]:
        print("retimed", r["m"], r["n"], r["k"], f"{r['first_median_s'] * 1e6:.1f} us ->",
              f"{r['median_s'] * 1e6:.1f} us (min {r['min_s'] * 1e6:.1f}, max {r['max_s'] * 1e6:.1f})")


if __name__ == "__main__":
    main()
