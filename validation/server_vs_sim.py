#!/usr/bin/env python3
"""The real server (measured by `inferlab loadgen`) against `inferlab serve --executor sim`.

validation/server_loads_gpu.sh runs `inferlab server` on the GPU (chunked prefill, 256
sequences, 2048 batched tokens, a KV pool of 262144 tokens, CUDA graphs) and drives it with
`inferlab loadgen`: first its capacity (every request at time 0, at most 256 in flight), then
Poisson loads at 25%, 50% and 90% of it, lognormal lengths, seed 3. This script runs the
simulator on the same request streams (same workload flags and seed, so the same arrival times
and lengths; the rate is the one the GPU script used) with the same limits and pool, the
calibrated cost model and the engine's kernel list (--framework inferlab), and writes both and
their ratios. The simulator has no client: its capacity run admits every request at time 0,
while loadgen keeps 256 in flight, so only the capacity's throughput is compared.

usage: server_vs_sim.py BINARY LOADS_DIR OUT.json [HARDWARE (default h100-sxm)]
"""
import json
import subprocess
import sys

FIELDS = [("ttft_ms", "p50"), ("ttft_ms", "p99"), ("tpot_ms", "p50"), ("tpot_ms", "p99"),
          ("requests_per_s", None), ("output_tokens_per_s", None)]


def simulate(binary, rate, requests, hardware):
    cmd = [binary, "serve", "--model", "llama-3-8b", "--hardware", hardware, "--executor", "sim",
           "--framework", "inferlab", "--cost", "calibrated", "--cuda-graphs", "on", "--policy",
           "chunked", "--max-num-seqs", "256", "--max-num-batched-tokens", "2048", "--kv-tokens",
           "262144", "--rate", str(rate), "--requests", str(requests), "--input-dist",
           "lognormal:512,0.6", "--output-dist", "lognormal:128,0.6", "--seed", "3", "--format",
           "json"]
    r = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return json.loads(r.stdout)


def value(run, field, stat):
    return run[field] if stat is None else run[field][stat]


def main():
    binary, loads_dir, out = sys.argv[1:4]
    hardware = sys.argv[4] if len(sys.argv) > 4 else "h100-sxm"
    capacity = json.load(open(f"{loads_dir}/capacity.json"))
    rate_capacity = capacity["requests_per_s"]
    result = {"method": __doc__.split("\n\n")[1].replace("\n", " "),
              "capacity_requests_per_s": rate_capacity, "hardware": hardware, "runs": []}
    loads = [("capacity", 0.0, capacity, 800)]
    for share in (25, 50, 90):
        measured = json.load(open(f"{loads_dir}/load_{share}.json"))
        loads.append((f"{share}%", round(rate_capacity * share / 100, 3), measured,
                      measured["requests"]))
    for name, rate, measured, requests in loads:
        sim = simulate(binary, rate, requests, hardware)
        fields = FIELDS[4:5] if name == "capacity" else FIELDS
        row = {"load": name, "rate_per_s": rate, "server": measured, "sim": sim,
               "sim_over_server": {}}
        for field, stat in fields:
            key = field if stat is None else f"{field}.{stat}"
            row["sim_over_server"][key] = value(sim, field, stat) / value(measured, field, stat)
        result["runs"].append(row)
        print(name, f"rate {rate}/s", {k: round(v, 3) for k, v in row["sim_over_server"].items()})
    json.dump(result, open(out, "w"), indent=1)


if __name__ == "__main__":
    main()
