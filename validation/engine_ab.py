#!/usr/bin/env python3
"""A/B runs of an engine switch on the GPU: `inferlab bench` per case under each setting of one
environment variable (or each build: BINARY), settings interleaved round by round (A B A B ...) so
that drift of the clock or the host lands on both sides alike.

Usage on the device:
  python3 validation/engine_ab.py BUILD/inferlab OUT.json VAR=V1,V2 CASE[,CASE...] [ROUNDS]
CASE is MODEL:PHASE:BATCH:N[:WEIGHTS] (N: prompt tokens for prefill, the context for decode;
WEIGHTS: bench --weights, default the model's bf16; w8a8 is --weights int8 --activations int8). Decode: bench --input N --output 33, the
mean of 32 graphed decode steps (device time by CUDA events) and their spread; prefill: bench
--input N --output 1 --repeats 10, the median. Example:
  python3 validation/engine_ab.py build/gpurun/inferlab $OUT/ab.json INFERLAB_ENGINE_GEMV_PDL=off,early,late \\
      llama-3-8b:decode:1:1024,llama-3-8b:decode:1:1024:int4 2
VAR BINARY compares builds instead: its values are the inferlab binaries (BUILD/inferlab is then
unused), e.g. BINARY=build/inferlab_before,build/gpurun/inferlab.
"""
import json
import os
import statistics
import subprocess
import sys
import time


def bench(binary, model, phase, batch, n, weights, env):
    if phase == "prefill":
        args = ["--input", str(n), "--output", "1", "--repeats", "10"]
    else:
        args = ["--input", str(n), "--output", "33", "--repeats", "1"]
    cmd = [binary, "bench", "--model", model, "--device", "cuda", "--format", "json",
           "--no-kernels", "--cuda-graphs", "on", "--batch", str(batch)] + args
    if weights == "w8a8":  # not a weight format: int8 weights with int8 activations
        cmd += ["--weights", "int8", "--activations", "int8"]
    elif weights:
        cmd += ["--weights", weights]
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if r.returncode != 0:
        return {"error": r.stderr.strip()[-1500:]}
    j = json.loads(r.stdout)
    key = "prefill_ms" if phase == "prefill" else "tpot_ms"
    spread = j["spread"]["prefill" if phase == "prefill" else "decode_step"]
    return {"ms": j[key], "spread": spread, "device_name": j.get("device_name")}


def main():
    binary, out, switch, cases = sys.argv[1:5]
    rounds = int(sys.argv[5]) if len(sys.argv) > 5 else 2
    var, values = switch.split("=")
    values = values.split(",")
    doc = {"measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "method": __doc__.split("\n\n")[0].replace("\n", " "), "variable": var,
           "values": values, "rounds": rounds, "cases": []}
    for case in cases.split(","):
        parts = case.split(":")
        model, phase, batch, n = parts[0], parts[1], int(parts[2]), int(parts[3])
        weights = parts[4] if len(parts) > 4 else ""
        row = {"case": case, "runs": {v: [] for v in values}}
        for _ in range(rounds):
            for v in values:
                env = dict(os.environ) if var == "BINARY" else dict(os.environ, **{var: v})
                run_binary = v if var == "BINARY" else binary
                row["runs"][v].append(bench(run_binary, model, phase, batch, n, weights, env))
                json.dump(doc | {"cases": doc["cases"] + [row]}, open(out, "w"), indent=1)
        row["median_ms"] = {}
        for v in values:
            ms = [r["ms"] for r in row["runs"][v] if "ms" in r]
            row["median_ms"][v] = statistics.median(ms) if ms else None
        doc["cases"].append(row)
        json.dump(doc, open(out, "w"), indent=1)
        print(case, " ".join(f"{var}={v}: {row['median_ms'][v]}" for v in values), flush=True)


if __name__ == "__main__":
    main()
