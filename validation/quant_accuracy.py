#!/usr/bin/env python3
"""Accuracy of the engine's number formats on random weights: logit agreement with bf16.

Random weights give nearly flat logits, so this says how far each format moves the model's
output, not how a real checkpoint's quality would change. For each model: one random prompt of
PREFILL tokens and DECODE teacher-forced decode steps (`inferlab logits`), run in bf16 and under
each format; per position the cosine of the logit vectors and whether the argmax is the same.
Also "top-1 within a bf16 tie": a different argmax counts as agreement when bf16 scores the
format's pick within one bf16 ulp of its own maximum (docs/MEASUREMENTS.md §18 explains why).

Usage on the device:  python3 validation/quant_accuracy.py BUILD/inferlab OUT.json [MODELS]
"""
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

PREFILL, DECODE = 512, 64
FORMATS = [  # (name, engine switches)
    ("int8", ["--weights", "int8"]),
    ("int4 g128", ["--weights", "int4"]),
    ("fp8", ["--weights", "fp8"]),
    ("w8a8", ["--weights", "int8", "--activations", "int8"]),
    ("kv int8", ["--kv", "int8"]),
    ("kv fp8", ["--kv", "fp8"]),
    ("int4 g128 + kv fp8", ["--weights", "int4", "--kv", "fp8"]),
]
MODELS = ["llama-3.2-1b", "llama-3-8b"]


def logits(binary, model, ids_path, out, switches):
    cmd = [binary, "logits", "--model", model, "--device", "cuda", "--tokens", ids_path,
           "--prefill", str(PREFILL), "--out", out] + switches
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(" ".join(cmd) + ": " + r.stderr[-2000:])
    return np.load(out)


def bf16_ulp(x):
    exponent = np.floor(np.log2(np.maximum(np.abs(x), 1e-30)))
    return 2.0 ** (exponent - 7)


def agreement(test, ref):
    cos = (test * ref).sum(1) / np.sqrt((test * test).sum(1) * (ref * ref).sum(1))
    top_test, top_ref = test.argmax(1), ref.argmax(1)
    same = top_test == top_ref
    ref_max = ref.max(1)
    picked = ref[np.arange(len(ref)), top_test]
    tie = same | (ref_max - picked <= bf16_ulp(ref_max))
    return {"positions": int(len(ref)), "cosine_mean": float(cos.mean()),
            "cosine_min": float(cos.min()), "top1_agreement": float(same.mean()),
            "top1_within_bf16_tie": float(tie.mean())}


def main():
    binary, out = sys.argv[1], sys.argv[2]
    models = sys.argv[3].split(",") if len(sys.argv) > 3 else MODELS
    rng = np.random.default_rng(0)
    result = {"measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
              "method": __doc__.split("\n\n")[1].replace("\n", " "), "models": {}}
    work = tempfile.mkdtemp()
    for model in models:
        ids = rng.integers(0, 128000, PREFILL + DECODE).tolist()
        ids_path = os.path.join(work, "ids.json")
        json.dump(ids, open(ids_path, "w"))
        ref = logits(binary, model, ids_path, os.path.join(work, "bf16.npy"), [])
        rows = {}
        for name, switches in FORMATS:
            try:
                test = logits(binary, model, ids_path, os.path.join(work, "q.npy"), switches)
                rows[name] = agreement(test, ref)
            except RuntimeError as error:
                rows[name] = {"error": str(error)}
            print(model, name, rows[name], flush=True)
            result["models"][model] = rows
            json.dump(result, open(out, "w"), indent=1)
    print(f"{'model':<14} {'format':<20} {'cos mean':>9} {'cos min':>9} {'top-1':>7} {'tie':>7}")
    for model, rows in result["models"].items():
        for name, r in rows.items():
            if "error" in r:
                print(f"{model:<14} {name:<20} error")
                continue
            print(f"{model:<14} {name:<20} {r['cosine_mean']:>9.5f} {r['cosine_min']:>9.5f} "
                  f"{100 * r['top1_agreement']:>6.1f}% {100 * r['top1_within_bf16_tie']:>6.1f}%")


if __name__ == "__main__":
    main()
