#!/usr/bin/env python3
"""Does the decode attention's time follow its waves of CTAs rather than its bytes?

A study on the committed H200 engine profiles (docs/MEASUREMENTS.md §21), not a model the
project ships. The engine's flash-decode launch (src/engine/cuda/attention.cu,
launch_decode_path) gives each (sequence, KV head) a CTA and, when those are fewer than the
SMs, splits the context into partitions of at least 64 positions, about two CTAs per SM. Each
CTA streams its partition with a fixed number of bytes in flight, so the kernel lasts about
(waves of 2 x SMs CTAs) x (partition) whatever the total bytes. Fitted per file on the fit
split only (t0 + c x feature, least squares on relative error), three features:
  bytes           the KV bytes the class moves (today's engine cost form, memory term)
  waves           ceil(CTAs / (2 SMs)) x 2 SMs x partition x bytes per position and KV head
  waves+combine   the above and the split-combine's partial rows (sequences x heads x splits)
Caveat: the profiled class times come from eager passes, whose split uses the actual context;
a CUDA-graph replay splits by the captured bound (the next power of two of the context, at
least 256), which a model of graph steps would have to use instead.

Usage: python3 validation/attention_waves_study.py [--sms 132]
"""
import argparse
import json
import math
from pathlib import Path

DATA = Path(__file__).resolve().parent / "data"
COMBOS = ["flash", "graphs", "kv_fp8", "kv_int8", "w_int4", "w_fp8"]
HEADS, KV_HEADS = 32, 8  # Llama 3 8B


def split(batch, context, sms):
    group = HEADS // KV_HEADS
    head_tile = 1 if group == 1 else 2 if group == 2 else 4 if group <= 4 else 8
    ctas = batch * KV_HEADS * math.ceil(group / head_tile)
    max_splits = min(math.ceil(context / 64), 256)
    splits = 1
    if ctas < sms and max_splits > 1:
        splits = min(max_splits, math.ceil(2 * sms / ctas))
    partition = math.ceil(context / splits)
    splits = math.ceil(context / partition)
    return ctas * splits, partition, splits


def solve(rows, targets):
    """Least squares by the normal equations (no numpy on the CPU machine)."""
    n = len(rows[0])
    m = [[sum(r[i] * r[j] for r in rows) for j in range(n)] for i in range(n)]
    v = [sum(r[i] * t for r, t in zip(rows, targets)) for i in range(n)]
    for i in range(n):
        p = max(range(i, n), key=lambda r: abs(m[r][i]))
        m[i], m[p], v[i], v[p] = m[p], m[i], v[p], v[i]
        for r in range(n):
            if r != i and m[i][i]:
                f = m[r][i] / m[i][i]
                m[r] = [a - f * b for a, b in zip(m[r], m[i])]
                v[r] -= f * v[i]
    return [v[i] / m[i][i] if m[i][i] else 0.0 for i in range(n)]


def features(form, batch, context, kv_bytes, sms):
    ctas, partition, splits = split(batch, context, sms)
    per_position = kv_bytes / (batch * context * KV_HEADS)
    waves = math.ceil(ctas / (2 * sms)) * 2 * sms * partition * per_position
    if form == "bytes":
        return [1.0, kv_bytes]
    if form == "waves":
        return [1.0, waves]
    return [1.0, waves, batch * HEADS * splits if splits > 1 else 0.0]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sms", type=int, default=132)
    args = ap.parse_args()
    print(f"{'profile':8} {'form':14} {'fit MAPE':>9} {'fit worst':>10} {'held-out MAPE':>14}")
    for combo in COMBOS:
        doc = json.loads((DATA / f"engine_profile_h200_llama-3-8b_{combo}_2026-11-25.json").read_text())
        samples = []
        for p in doc["points"]:
            if p["phase"] != "decode":
                continue
            k = next(x for x in p["kernels"] if x["kernel"] == "attention")
            samples.append((p["split"], p["batch"], p["context"] + 1, k["ms"] / k["launches"], k["bytes"] / k["launches"]))
        for form in ["bytes", "waves", "waves+combine"]:
            x = [features(form, b, c, by, args.sms) for _, b, c, _, by in samples]
            y = [ms for *_, ms, _ in samples]
            fit = [s == "fit" for s, *_ in samples]
            coef = solve([[v / t for v in f] for f, t, ok in zip(x, y, fit) if ok], [1.0] * sum(fit))
            err = [abs(sum(c * v for c, v in zip(coef, f)) / t - 1) for f, t in zip(x, y)]
            ef = [e for e, ok in zip(err, fit) if ok]
            eh = [e for e, ok in zip(err, fit) if not ok]
            print(f"{combo:8} {form:14} {100 * sum(ef) / len(ef):8.1f}% {100 * max(ef):9.0f}% {100 * sum(eh) / len(eh):13.1f}%")


if __name__ == "__main__":
    main()
