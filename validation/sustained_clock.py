#!/usr/bin/env python3
"""Does the GPU keep its clock when it works without pause? Operators in the reference data are
timed alone (an L2 flush between runs, so the tensor cores rest most of the time); whole steps
are CUDA-graph replays back to back. If the SM clock falls under sustained tensor-core load,
compute-bound kernels run slower inside a long prefill than alone.

Measured, with nvidia-smi sampling the SM clock and board power every 20 ms:
  * one GEMM timed alone the way torch_reference.time_op does it (flush, event pair);
  * the same GEMM back to back for a few seconds, per-launch time from events over blocks;
  * Llama 3 8B prefill of 2048 tokens and decode of 1 x 512 as graph replays back to back,
    each replay timed, so the first replays (cool, boosted) and the last can be compared.

Usage on the device: python3 validation/sustained_clock.py $OUT/sustained_clock.json
"""
import json
import os
import statistics
import subprocess
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_reference import DEV, PlainLlama, capture_graph, load_config, rand, time_op  # noqa: E402


class ClockSampler:
    """nvidia-smi in the background: (host seconds, SM MHz, watts) every 20 ms."""

    def __enter__(self):
        self.t0 = time.time()
        self.proc = subprocess.Popen(
            ["nvidia-smi", "--query-gpu=timestamp,clocks.sm,power.draw",
             "--format=csv,noheader,nounits", "-lms", "20"],
            stdout=subprocess.PIPE, text=True)
        time.sleep(0.3)
        return self

    def mark(self):
        return time.time() - self.t0

    def __exit__(self, *exc):
        time.sleep(0.1)
        self.proc.terminate()
        out, _ = self.proc.communicate()
        self.samples = []
        for line in out.splitlines():
            parts = [p.strip() for p in line.split(",")]
            if len(parts) == 3:
                try:
                    self.samples.append((float(parts[1]), float(parts[2])))
                except ValueError:
                    pass


def sampled(label, fn):
    """Runs fn() under a sampler; returns fn's result plus clock and power statistics."""
    with ClockSampler() as s:
        result = fn()
    mhz = [m for m, _ in s.samples]
    watts = [w for _, w in s.samples]
    return dict(label=label, result=result, samples=len(mhz),
                sm_mhz_median=statistics.median(mhz) if mhz else None,
                sm_mhz_min=min(mhz) if mhz else None,
                power_w_median=statistics.median(watts) if watts else None,
                power_w_max=max(watts) if watts else None)


def gemm_alone(m, n, k, seconds=2.0):
    x, w = rand(m, k), rand(n, k)
    rows = []
    end = time.time() + seconds
    while time.time() < end:
        rows.append(time_op(lambda: F.linear(x, w), repeats=25, warmup=3)["median_s"])
    return dict(m=m, n=n, k=k, median_s=statistics.median(rows))


def gemm_back_to_back(m, n, k, seconds=4.0, block=50):
    x, w = rand(m, k), rand(n, k)
    per_launch = []
    end = time.time() + seconds
    while time.time() < end:
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        for _ in range(block):
            F.linear(x, w)
        b.record()
        b.synchronize()
        per_launch.append(a.elapsed_time(b) / 1e3 / block)
    q = max(1, len(per_launch) // 10)
    return dict(m=m, n=n, k=k, blocks=len(per_launch), first_s=statistics.median(per_launch[:q]),
                last_s=statistics.median(per_launch[-q:]), median_s=statistics.median(per_launch))


def replays_back_to_back(g, seconds):
    times = []
    end = time.time() + seconds
    while time.time() < end:
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        g.replay()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) / 1e3)
    q = max(1, len(times) // 10)
    return dict(replays=len(times), first_s=statistics.median(times[:q]),
                last_s=statistics.median(times[-q:]), median_s=statistics.median(times),
                min_s=min(times))


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else "sustained_clock.json"
    out = {"torch": torch.__version__, "device": torch.cuda.get_device_name(0),
           "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "runs": []}
    runs = out["runs"]
    with torch.no_grad():
        runs.append(sampled("idle", lambda: time.sleep(1.0)))
        for shape in [(2048, 14336, 4096), (8192, 8192, 8192)]:
            runs.append(sampled("gemm_alone", lambda: gemm_alone(*shape)))
            runs.append(sampled("gemm_back_to_back", lambda: gemm_back_to_back(*shape)))
            time.sleep(2.0)  # let it cool down before the next measurement
        cfg = load_config("llama-3-8b")
        model = PlainLlama(cfg, max_batch=1, max_seq=2048 + 8)
        for phase, n in [("prefill", 2048), ("prefill", 512), ("decode", 512)]:
            tokens = torch.randint(0, 1000, (1, n if phase == "prefill" else 1), device=DEV)
            pos = torch.arange(n, device=DEV) if phase == "prefill" else torch.tensor([n - 1], device=DEV)
            g = capture_graph(lambda: model(tokens, pos, n))
            time.sleep(2.0)
            r = sampled(f"llama-3-8b {phase} {n} replays", lambda: replays_back_to_back(g, 4.0))
            r.update(phase=phase, tokens=n)
            runs.append(r)
            del g
    with open(path, "w") as f:
        json.dump(out, f, indent=1)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
