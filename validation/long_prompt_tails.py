#!/usr/bin/env python3
"""Simulated / measured serving figures on the long-prompt workloads of MEASUREMENTS §27 and §29.

For each measured run (serve --executor engine on the H200, its JSON in validation/data/), runs
`serve --executor sim` with the same flags and prints simulated / measured TTFT and TPOT (p50,
p90, p99) and throughput. B and C were measured (§29) after the scheduler began to admit a
prompt only when all of it fits (B measured before that, §27, preempted itself 16 times); A and
the issue's workload preempted nothing, and their schedules are the same under either rule.

usage: long_prompt_tails.py INFERLAB [DATA_DIR] [--engine-costs FILE] [--format json]
(DATA_DIR: one folder holding every measured JSON, instead of the folders below)
"""
import argparse
import json
import os
import shlex
import subprocess
import sys

COMMON = "--hardware h200 --framework inferlab --cuda-graphs on --policy chunked"
L31 = ("--model llama-3.1-8b " + COMMON +
       " --max-num-seqs 64 --max-num-batched-tokens 8192 --kv-tokens 600000 --seed 21")
RUNS = {
    "A": L31 + " --requests 160 --rate 1.5 --input-dist lognormal:6000,0.8"
               " --output-dist lognormal:200,0.6",
    "B": L31 + " --requests 30 --rate 0.3 --input-dist uniform:2000,100000"
               " --output-dist lognormal:300,0.6",
    "C": L31 + " --requests 40 --rate 0.5 --input-dist uniform:2000,60000"
               " --output-dist lognormal:250,0.6",
    "issue": "--model llama-3-8b " + COMMON + " --max-num-seqs 128 --max-num-batched-tokens 4096"
             " --kv-tokens 200000 --prefix-caching --requests 300 --input-dist lognormal:1500,0.9"
             " --output-dist lognormal:300,0.8 --shared-prefix tokens=1024,groups=4,share=0.5"
             " --seed 11 --rate 5",
}
BEFORE, AFTER = "long_context_h200_2026-11-27", "long_context_h200_2026-11-27_admission"
MEASURED = {"A": (BEFORE, "longA.json"), "B": (AFTER, "longB.json"), "C": (AFTER, "longC.json"),
            "issue": (BEFORE, "issue.json")}


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser()
    ap.add_argument("inferlab")
    ap.add_argument("data", nargs="?", default=None)
    ap.add_argument("--engine-costs", default="auto")
    ap.add_argument("--format", default="table")
    args = ap.parse_args()
    out = {}
    for name, flags in RUNS.items():
        folder, file = MEASURED[name]
        data = args.data or os.path.join(here, "data", folder)
        measured = json.load(open(os.path.join(data, file)))
        cmd = [args.inferlab, "serve", "--executor", "sim", "--engine-costs", args.engine_costs,
               "--format", "json"] + shlex.split(flags)
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"{' '.join(cmd)}: {r.stderr}")
        sim = json.loads(r.stdout)
        row = {"rejected": [measured["rejected"], sim["rejected"]]}
        for field in ("ttft_ms", "tpot_ms"):
            for stat in ("p50", "p90", "p99"):
                row[f"{field}_{stat}"] = sim[field][stat] / measured[field][stat]
        row["requests_per_s"] = sim["requests_per_s"] / measured["requests_per_s"]
        out[name] = row
    if args.format == "json":
        print(json.dumps(out, indent=1))
        return
    keys = [k for k in next(iter(out.values())) if k != "rejected"]
    print("simulated / measured   " + " ".join(f"{k:>13}" for k in keys) + "  rejected (m, s)")
    for name, row in out.items():
        print(f"{name:<22} " + " ".join(f"{row[k]:>13.3f}" for k in keys) +
              f"  {row['rejected']}")


if __name__ == "__main__":
    main()
