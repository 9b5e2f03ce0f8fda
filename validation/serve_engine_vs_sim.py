#!/usr/bin/env python3
"""The serving simulator against the engine on the same trace, on the GPU machine.

One scheduler, two executors: `inferlab serve --executor engine` runs every iteration the
scheduler forms on the CUDA backend (random weights at the model's real shapes, greedy, each
iteration timed on the wall clock), `--executor sim` prices the same iterations with the
calibrated cost model and the engine's own kernel list (`--framework inferlab`). Both get the
same KV pool (`--kv-tokens`), limits, policy and CUDA-graph switch, and the same request stream
(same --seed: lognormal prompt and output lengths, Poisson arrivals). The engine's capacity is
measured first (every request at time 0, `--rate 0`: requests/s it completes); then three
loads at 25%, 50% and 90% of it. For each run: p50/p99 TTFT and TPOT, throughput, simulated
over measured.

Usage on the device:  python3 validation/serve_engine_vs_sim.py BUILD/inferlab OUT.json
                      [--model llama-3-8b] [--requests 300] [--loads 0.25,0.5,0.9]
Anywhere, the simulator again (a later calibration) beside a file's engine runs:
                      python3 validation/serve_engine_vs_sim.py BUILD/inferlab OUT.json
                      --resimulate EARLIER.json
"""
import argparse
import json
import subprocess
import time

FIELDS = [("ttft_ms", "p50"), ("ttft_ms", "p99"), ("tpot_ms", "p50"), ("tpot_ms", "p99"),
          ("e2e_ms", "p50"), ("requests_per_s", None), ("output_tokens_per_s", None)]


def serve(binary, executor, rate, args):
    cmd = [binary, "serve", "--model", args.model, "--hardware", args.hardware,
           "--executor", executor, "--framework", "inferlab", "--cost", "calibrated",
           "--cuda-graphs", "on", "--policy", "chunked", "--max-num-seqs", "256",
           "--max-num-batched-tokens", "2048", "--kv-tokens", str(args.kv_tokens),
           "--rate", str(rate), "--requests", str(args.requests),
           "--input-dist", args.input_dist, "--output-dist", args.output_dist,
           "--seed", "3", "--format", "json"]
    if executor == "engine":
        cmd += ["--device", "cuda"]
    t = time.time()
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({r.returncode}):\n{r.stderr}")
    out = json.loads(r.stdout)
    out["wall_s"] = time.time() - t
    return out


def pick(run, field, stat):
    return run[field] if stat is None else run[field][stat]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("out")
    ap.add_argument("--model", default="llama-3-8b")
    ap.add_argument("--hardware", default="h100-sxm")
    ap.add_argument("--requests", type=int, default=300)
    ap.add_argument("--kv-tokens", type=int, default=262144)
    ap.add_argument("--input-dist", default="lognormal:512,0.6")
    ap.add_argument("--output-dist", default="lognormal:128,0.6")
    ap.add_argument("--loads", default="0.25,0.5,0.9",
                    help="shares of the measured capacity to run beside saturation")
    ap.add_argument("--resimulate", help="a result file: keep its engine runs, simulate again")
    args = ap.parse_args()
    if args.resimulate:
        return resimulate(args)
    result = {"model": args.model, "hardware": args.hardware, "requests": args.requests,
              "kv_tokens": args.kv_tokens, "input_dist": args.input_dist,
              "output_dist": args.output_dist,
              "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
              "method": __doc__.split("\n\n")[1].replace("\n", " "), "runs": []}
    saturated = serve(args.binary, "engine", 0, args)
    capacity = saturated["requests_per_s"]
    result["capacity_requests_per_s"] = capacity
    shares = [float(f) for f in args.loads.split(",") if f]
    loads = [("saturated", 0.0)] + [(f"{int(f * 100)}%", f * capacity) for f in shares]
    for name, rate in loads:
        measured = saturated if rate == 0.0 else serve(args.binary, "engine", rate, args)
        simulated = serve(args.binary, "sim", rate, args)
        row = {"load": name, "rate_per_s": rate, "engine": measured, "sim": simulated,
               "sim_over_engine": {}}
        for field, stat in FIELDS:
            key = field if stat is None else f"{field}.{stat}"
            row["sim_over_engine"][key] = pick(simulated, field, stat) / pick(measured, field, stat)
        result["runs"].append(row)
        print(name, f"rate {rate:.2f}/s", json.dumps(row["sim_over_engine"]), flush=True)
        json.dump(result, open(args.out, "w"), indent=1)


def resimulate(args):
    earlier = json.load(open(args.resimulate))
    for key in ("model", "hardware", "requests", "kv_tokens", "input_dist", "output_dist"):
        setattr(args, key, earlier[key])
    result = dict(earlier, resimulated_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                  runs=[])
    for run in earlier["runs"]:
        simulated = serve(args.binary, "sim", run["rate_per_s"], args)
        row = dict(run, sim=simulated, sim_over_engine={})
        for field, stat in FIELDS:
            key = field if stat is None else f"{field}.{stat}"
            row["sim_over_engine"][key] = pick(simulated, field, stat) / pick(run["engine"], field, stat)
        result["runs"].append(row)
        print(run["load"], f"rate {run['rate_per_s']:.2f}/s", json.dumps(row["sim_over_engine"]),
              flush=True)
    json.dump(result, open(args.out, "w"), indent=1)


if __name__ == "__main__":
    main()
