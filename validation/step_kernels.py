#!/usr/bin/env python3
"""Where the GPU time of one whole step goes: every kernel of a CUDA-graph replay of the plain
Llama (torch_reference.PlainLlama) with its duration, from the PyTorch profiler (CUPTI).

For each step it records the replay's wall time (CUDA events, median), the sum of kernel
durations (busy time), the idle time between kernels (wall minus busy), and per kernel name
its count and total duration. This is what a per-operator prediction is checked against:
the step's time split by kernel, and the in-stream cost of each small kernel.

Usage on the device: python3 validation/step_kernels.py $OUT/step_kernels.json
"""
import collections
import json
import os
import sys
import time

import torch
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_reference import DEV, PlainLlama, capture_graph, load_config, time_op  # noqa: E402

STEPS = {  # model: [(phase, batch, tokens or context)]
    "llama-3.2-1b": [("prefill", 1, 512), ("decode", 1, 512), ("decode", 32, 1024)],
    "llama-3-8b": [("prefill", 1, 512), ("decode", 1, 512)],
}


def kernels_of_replay(g):
    g.replay()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        g.replay()
        torch.cuda.synchronize()
    events = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA
              and e.name not in ("cudaGraphLaunch",)]
    events.sort(key=lambda e: e.time_range.start)
    return [(e.name, e.time_range.start, e.time_range.end) for e in events]


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else "step_kernels.json"
    out = {"torch": torch.__version__, "device": torch.cuda.get_device_name(0),
           "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "steps": []}
    with torch.no_grad():
        for name, steps in STEPS.items():
            cfg = load_config(name)
            model = PlainLlama(cfg, max_batch=32, max_seq=1024 + 8)
            for phase, batch, n in steps:
                tokens = torch.randint(0, 1000, (batch, n if phase == "prefill" else 1), device=DEV)
                pos = torch.arange(n, device=DEV) if phase == "prefill" else torch.tensor([n - 1], device=DEV)
                g = capture_graph(lambda: model(tokens, pos, n))
                wall = time_op(g.replay, repeats=15, warmup=2, flush=False)["median_s"]
                kernels = kernels_of_replay(g)
                busy_us = sum(end - start for _, start, end in kernels)
                span_us = kernels[-1][2] - kernels[0][1] if kernels else 0.0
                by_name = collections.defaultdict(lambda: [0, 0.0])
                for kname, start, end in kernels:
                    by_name[kname][0] += 1
                    by_name[kname][1] += end - start
                row = {"model": name, "phase": phase, "batch": batch,
                       ("tokens" if phase == "prefill" else "context"): n,
                       "wall_s": wall, "kernels": len(kernels), "busy_s": busy_us * 1e-6,
                       "span_s": span_us * 1e-6,
                       "by_kernel": sorted(({"name": k, "count": c, "total_s": t * 1e-6}
                                            for k, (c, t) in by_name.items()),
                                           key=lambda r: -r["total_s"])}
                out["steps"].append(row)
                print(f"{name} {phase} b={batch} n={n}: wall {wall * 1e3:.3f} ms, "
                      f"{len(kernels)} kernels busy {busy_us / 1e3:.3f} ms span {span_us / 1e3:.3f} ms")
                for r in row["by_kernel"][:12]:
                    print(f"   {r['count']:4d} {r['total_s'] * 1e3:8.3f} ms  {r['name'][:90]}")
                del g
            del model
            torch.cuda.empty_cache()
    with open(path, "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
