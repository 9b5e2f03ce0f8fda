#!/usr/bin/env python3
"""PyTorch's per-op eager dispatch cost on this host: a measurement of the host, not of steps.

An eager PyTorch step pays, for every op, CPython (the call and its arguments), PyTorch's
argument parser and dispatcher, the op's own host work (TensorIterator, the caching allocator,
cuBLAS's handle) and the kernel launch. This script times that on tiny CUDA tensors, where the
GPU work is far shorter than the host's, so the loop runs at the host's speed:

  torch_op_us   x.add_(1e-3) on a 1-element bf16 CUDA tensor, 2000 back to back: the figure the
                host rule uses (the same measurement as torch_reference.py's
                launch.eager_per_op_s, which the rule's constants were chosen against)
  ops{...}      the other op kinds an eager Llama layer issues, one at a time: add, broadcast
                mul, cat, view + transpose (no kernel), F.linear 1x16 (cuBLAS), F.rms_norm,
                index_copy_, SDPA with GQA on a tiny cache
  mix_us_per_op one of each in a loop, per op (the layer's mix, for comparison)

Each figure: CUDA events around the loop (what the host-bound GPU timeline sees) and the host's
own wall clock around it (perf_counter, the queue drained after), median of the repeats.

  python3 validation/host_dispatch.py OUT.json [--merge HOST.json] [--repeats 9]

--merge writes torch_op_us and the details into a host file of `inferlab probe --host-only`
(its "host" section), which `inferlab validate --host HOST.json` then reads.
"""
import argparse
import gc
import json
import os
import platform
import statistics
import sys
import time

import torch
import torch.nn.functional as F

DEV = "cuda"
BF16 = torch.bfloat16


def timed(fn, iterations, repeats):
    """Microseconds per call of fn(): CUDA events and host wall time, median of repeats."""
    for _ in range(max(1, iterations // 10)):
        fn()
    torch.cuda.synchronize()
    event_us, wall_us = [], []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        t0 = time.perf_counter()
        for _ in range(iterations):
            fn()
        t1 = time.perf_counter()
        end.record()
        torch.cuda.synchronize()
        event_us.append(start.elapsed_time(end) * 1e3 / iterations)
        wall_us.append((t1 - t0) * 1e6 / iterations)
    return {"event_us": statistics.median(event_us), "wall_us": statistics.median(wall_us),
            "event_min_us": min(event_us), "event_max_us": max(event_us),
            "iterations": iterations, "repeats": repeats}


def measure(repeats):
    x = torch.randn(1, device=DEV, dtype=torch.float32).to(BF16)
    a = torch.randn(1, 1, 16, device=DEV, dtype=BF16)
    b = torch.randn(1, 1, 16, device=DEV, dtype=BF16)
    w = torch.randn(16, 16, device=DEV, dtype=BF16)
    nw = torch.ones(16, device=DEV, dtype=BF16)
    q4 = torch.randn(1, 4, 1, 16, device=DEV, dtype=BF16)
    cos = torch.randn(1, 1, 1, 16, device=DEV, dtype=BF16)
    kc = torch.zeros(1, 2, 64, 16, device=DEV, dtype=BF16)
    k1 = torch.randn(1, 2, 1, 16, device=DEV, dtype=BF16)
    pos = torch.tensor([7], device=DEV)
    ops = {
        "add_": lambda: x.add_(1e-3),
        "add": lambda: torch.add(a, b),
        "mul_broadcast": lambda: q4 * cos,
        "cat": lambda: torch.cat([a, b], -1),
        "view_transpose": lambda: a.view(1, 1, 4, 4).transpose(1, 2),
        "linear_1x16": lambda: F.linear(a, w),
        "rms_norm": lambda: F.rms_norm(a, (16,), nw, 1e-5),
        "index_copy_": lambda: kc.index_copy_(2, pos, k1),
        "sdpa_gqa": lambda: F.scaled_dot_product_attention(q4, kc[:, :, :8], kc[:, :, :8],
                                                           enable_gqa=True),
    }
    gc.collect()
    gc.disable()
    try:
        with torch.no_grad():
            out = {name: timed(fn, 2000 if name == "add_" else 500, repeats)
                   for name, fn in ops.items()}
            fns = list(ops.values())

            def mix():
                for fn in fns:
                    fn()
            mixed = timed(mix, 100, repeats)
    finally:
        gc.enable()
    return out, {k: v / len(fns) if k.endswith("_us") else v for k, v in mixed.items()}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("path", nargs="?",
                    default=os.path.join(os.environ.get("OUT", "."), "host_dispatch.json"))
    ap.add_argument("--merge", default="", help="host file (inferlab probe --host-only) to fill in")
    ap.add_argument("--repeats", type=int, default=9)
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print("host_dispatch.py: error: PyTorch sees no CUDA GPU; run this on the GPU machine",
              file=sys.stderr)
        return 2
    t0 = time.time()
    ops, mix = measure(args.repeats)
    result = {
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "device": torch.cuda.get_device_name(0),
        "torch": torch.__version__,
        "python": platform.python_version(),
        "cpu": platform.processor() or platform.machine(),
        "method": "tiny CUDA tensors, ops back to back from a Python loop (GC off); CUDA events "
                  "around the loop and perf_counter around it, median of repeats, us per op",
        "torch_op_us": ops["add_"]["event_us"],
        "ops": ops,
        "mix_us_per_op": mix,
        "elapsed_s": time.time() - t0,
    }
    with open(args.path, "w") as f:
        json.dump(result, f, indent=1)
    print(f"torch_op_us {result['torch_op_us']:.2f} (x.add_, events; host wall "
          f"{ops['add_']['wall_us']:.2f}); mix {mix['event_us']:.2f} us/op; "
          + ", ".join(f"{k} {v['event_us']:.1f}" for k, v in ops.items()))
    if args.merge:
        with open(args.merge) as f:
            host_file = json.load(f)
        host_file["host"]["torch_op_us"] = result["torch_op_us"]
        host_file["host"]["torch"] = {k: v for k, v in result.items() if k != "torch_op_us"}
        host_file["source"] = (host_file.get("source", "") + "; torch_op_us: "
                               "validation/host_dispatch.py " + result["measured_at"])
        with open(args.merge, "w") as f:
            json.dump(host_file, f, indent=1)
        print(f"merged into {args.merge}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
