#!/usr/bin/env python3
"""Where the GPU time of one whole step goes: every kernel of a CUDA-graph replay of the plain
Llama (torch_reference.PlainLlama) with its duration, from the PyTorch profiler (CUPTI).

For each step it records the replay's wall time (CUDA events, median), the sum of kernel
durations (busy time), the idle time between kernels (wall minus busy), and per kernel name
its count and total duration. This is what a per-operator prediction is checked against:
the step's time split by kernel, and the in-stream cost of each small kernel.

With --set large: the large prefills and a large decode, each profiled twice: once after a
single warm-up replay (boost clock) and once right after 3 s of back-to-back replays (the clock
the power cap holds), with the SM clock read by nvidia-smi at that moment, and the ordered
kernel durations of the whole replay (to tell the projections apart).

Usage on the device: python3 validation/step_kernels.py $OUT/step_kernels.json [--set large]
"""
import collections
import json
import os
import subprocess
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
STEPS_LARGE = {
    "llama-3.2-1b": [("prefill", 1, 128), ("prefill", 8, 1024)],
    "llama-3.2-3b": [("prefill", 4, 1024)],
    "llama-3-8b": [("prefill", 1, 2048), ("prefill", 4, 1024), ("decode", 64, 1024)],
}
SUSTAIN_S = 3.0


def sm_clock_mhz():
    try:
        text = subprocess.run(["nvidia-smi", "--query-gpu=clocks.sm", "--format=csv,noheader,nounits"],
                              capture_output=True, text=True, timeout=10).stdout
        return float(text.split()[0])
    except (OSError, ValueError, IndexError, subprocess.SubprocessError):
        return None


def sustain(g, seconds):
    end = time.time() + seconds
    while time.time() < end:
        for _ in range(5):
            g.replay()
        torch.cuda.synchronize()


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


def summary(kernels):
    busy_us = sum(end - start for _, start, end in kernels)
    span_us = kernels[-1][2] - kernels[0][1] if kernels else 0.0
    by_name = collections.defaultdict(lambda: [0, 0.0])
    for kname, start, end in kernels:
        by_name[kname][0] += 1
        by_name[kname][1] += end - start
    return busy_us, span_us, sorted(({"name": k, "count": c, "total_s": t * 1e-6}
                                     for k, (c, t) in by_name.items()), key=lambda r: -r["total_s"])


def ordered(kernels, names):
    """[[index into names, start offset us, duration us], ...] in launch order."""
    t0 = kernels[0][1] if kernels else 0.0
    rows = []
    for kname, start, end in kernels:
        if kname not in names:
            names.append(kname)
        rows.append([names.index(kname), round(start - t0, 2), round(end - start, 2)])
    return rows


def step_graphs(plan, max_batch, max_seq):
    """(model, phase, batch, tokens or context, captured graph of that step) for each step."""
    with torch.no_grad():
        for name, steps in plan.items():
            model = PlainLlama(load_config(name), max_batch=max_batch, max_seq=max_seq)
            for phase, batch, n in steps:
                tokens = torch.randint(0, 1000, (batch, n if phase == "prefill" else 1), device=DEV)
                pos = torch.arange(n, device=DEV) if phase == "prefill" else torch.tensor([n - 1], device=DEV)
                g = capture_graph(lambda: model(tokens, pos, n))
                yield name, phase, batch, n, g
                del g
            del model
            torch.cuda.empty_cache()


def main_large(path):
    out = {"torch": torch.__version__, "device": torch.cuda.get_device_name(0),
           "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "names": [],
           "steps": []}
    with torch.no_grad():
        for name, phase, batch, n, g in step_graphs(STEPS_LARGE, 64, 2048 + 8):
            time.sleep(2.0)  # let the clock recover from the previous step
            cold = time_op(g.replay, repeats=5, warmup=1, flush=False)["median_s"]
            kernels_cold = kernels_of_replay(g)
            clock_cold = sm_clock_mhz()
            sustain(g, SUSTAIN_S)
            warm = time_op(g.replay, repeats=10, warmup=0, flush=False)["median_s"]
            kernels_warm = kernels_of_replay(g)
            clock_warm = sm_clock_mhz()
            row = {"model": name, "phase": phase, "batch": batch,
                   ("tokens" if phase == "prefill" else "context"): n}
            for label, wall, kernels, clock in [("cold", cold, kernels_cold, clock_cold),
                                                ("warm", warm, kernels_warm, clock_warm)]:
                busy_us, span_us, by_kernel = summary(kernels)
                row[label] = {"wall_s": wall, "sm_mhz": clock, "kernels": len(kernels),
                              "busy_s": busy_us * 1e-6, "span_s": span_us * 1e-6,
                              "by_kernel": by_kernel,
                              "sequence": ordered(kernels, out["names"])}
                print(f"{name} {phase} b={batch} n={n} {label}: wall {wall * 1e3:.3f} ms, "
                      f"clock {clock} MHz, {len(kernels)} kernels busy {busy_us / 1e3:.3f} ms")
                for r in by_kernel[:8]:
                    print(f"   {r['count']:4d} {r['total_s'] * 1e3:8.3f} ms  {r['name'][:90]}")
            out["steps"].append(row)
    with open(path, "w") as f:
        json.dump(out, f)


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else "step_kernels.json"
    if "--set" in sys.argv and sys.argv[sys.argv.index("--set") + 1] == "large":
        return main_large(path)
    out = {"torch": torch.__version__, "device": torch.cuda.get_device_name(0),
           "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "steps": []}
    with torch.no_grad():
        for name, phase, batch, n, g in step_graphs(STEPS, 32, 1024 + 8):
            wall = time_op(g.replay, repeats=15, warmup=2, flush=False)["median_s"]
            kernels = kernels_of_replay(g)
            busy_us, span_us, by_kernel = summary(kernels)
            row = {"model": name, "phase": phase, "batch": batch,
                   ("tokens" if phase == "prefill" else "context"): n,
                   "wall_s": wall, "kernels": len(kernels), "busy_s": busy_us * 1e-6,
                   "span_s": span_us * 1e-6, "by_kernel": by_kernel}
            out["steps"].append(row)
            print(f"{name} {phase} b={batch} n={n}: wall {wall * 1e3:.3f} ms, "
                  f"{len(kernels)} kernels busy {busy_us / 1e3:.3f} ms span {span_us / 1e3:.3f} ms")
            for r in row["by_kernel"][:12]:
                print(f"   {r['count']:4d} {r['total_s'] * 1e3:8.3f} ms  {r['name'][:90]}")
    with open(path, "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
