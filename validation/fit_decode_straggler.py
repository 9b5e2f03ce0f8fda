#!/usr/bin/env python3
"""The flash-decode kernel's lone-CTA streaming rate (EngineCosts::decode_cta_bps), measured from
replayed serving iterations.

In a decode batch of unequal contexts the engine's decode kernel plans its splits for the whole
batch (model/engine_decode_plan.hpp), so the longest sequence's few CTAs each stream a whole
partition of its KV while the other SMs idle. The simulator prices that straggler as
layers x partition bytes / decode_cta_bps. This script measures decode_cta_bps: it replays the
FIT run's measured iterations (`serve --executor replay`) under a copy of the engine costs with
each candidate rate, and keeps the rate whose priced decode-only iterations are closest (mean
absolute relative error) to their measured GPU time. Only the fit run is used; the other runs
given with --check are priced with the chosen rate and reported, never fitted on.

usage: fit_decode_straggler.py INFERLAB ENGINE_COSTS.json --fit NAME:ITERATIONS.csv:FLAGS
                               [--check NAME:ITERATIONS.csv:FLAGS ...] [--out RESULT.json]
FLAGS are the measured run's serve flags (workload, limits, model), quoted as one argument.
"""
import argparse
import csv
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile

CANDIDATES_GBPS = [20, 25, 30, 35, 40, 45, 50, 55, 60, 70, 80, 90, 100, 120, 150]


def replay(inferlab, costs_path, run, out_csv):
    name, iterations, flags = run
    cmd = [inferlab, "serve", "--executor", "replay", "--replay-iterations", iterations,
           "--engine-costs", costs_path, "--iterations-csv", out_csv, "--format", "json"]
    cmd += shlex.split(flags)
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"replay of {name} failed ({r.returncode}): {r.stderr.strip()}")
    return json.loads(r.stdout)


def decode_errors(path):
    """Relative errors (priced / measured GPU time - 1) of the decode-only iterations, by
    whether their longest context is at least twice their mean (unequal) or not."""
    out = {"all": [], "unequal": [], "even": []}
    for row in csv.DictReader(open(path)):
        if int(row["prefill_tokens"]) > 0 or int(row["decode_seqs"]) == 0:
            continue
        err = float(row["simulated_ms"]) / float(row["device_ms"]) - 1
        out["all"].append(err)
        unequal = int(row["decode_max_context"]) >= 2 * int(row["decode_mean_context"])
        out["unequal" if unequal else "even"].append(err)
    return out


def mape(errors):
    return sum(abs(e) for e in errors) / len(errors) if errors else float("nan")


def parse_run(text):
    name, iterations, flags = text.split(":", 2)
    return name, iterations, flags


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("inferlab")
    ap.add_argument("engine_costs")
    ap.add_argument("--fit", required=True, type=parse_run)
    ap.add_argument("--check", action="append", default=[], type=parse_run)
    ap.add_argument("--out")
    args = ap.parse_args()
    base = json.load(open(args.engine_costs))
    tmp = tempfile.mkdtemp(prefix="straggler_")
    costs_path = os.path.join(tmp, "costs.json")

    def with_rate(gbps):
        costs = json.loads(json.dumps(base))
        costs["steps"]["decode_cta_bps"] = gbps * 1e9
        json.dump(costs, open(costs_path, "w"))
        return costs_path

    table = []
    for gbps in [0] + CANDIDATES_GBPS:
        out_csv = os.path.join(tmp, "fit.csv")
        replay(args.inferlab, with_rate(gbps), args.fit, out_csv)
        errors = decode_errors(out_csv)
        table.append({"gbps": gbps, "decode_mape": mape(errors["all"]),
                      "unequal_mape": mape(errors["unequal"]), "even_mape": mape(errors["even"]),
                      "decode_iterations": len(errors["all"])})
        print(f"{args.fit[0]} at {gbps:>4} GB/s: decode MAPE {table[-1]['decode_mape']:.4f} "
              f"(unequal {table[-1]['unequal_mape']:.4f}, even {table[-1]['even_mape']:.4f})")
    best = min((t for t in table if t["gbps"] > 0), key=lambda t: t["decode_mape"])
    print(f"chosen: {best['gbps']} GB/s on {args.fit[0]}")
    checks = {}
    for run in [args.fit] + args.check:
        for gbps in (0, best["gbps"]):
            out_csv = os.path.join(tmp, f"{run[0]}_{gbps}.csv")
            summary = replay(args.inferlab, with_rate(gbps), run, out_csv)
            errors = decode_errors(out_csv)
            checks.setdefault(run[0], {})[f"{gbps}_gbps"] = {
                "decode_mape": mape(errors["all"]), "unequal_mape": mape(errors["unequal"]),
                "median_decode_error": statistics.median(errors["all"]) if errors["all"] else None}
            print(f"{run[0]} at {gbps} GB/s: decode MAPE {mape(errors['all']):.4f}, unequal "
                  f"{mape(errors['unequal']):.4f} ({len(errors['unequal'])} iterations)")
    result = {"fit_run": args.fit[0], "candidates": table, "chosen_gbps": best["gbps"],
              "runs": checks}
    if args.out:
        json.dump(result, open(args.out, "w"), indent=1)


if __name__ == "__main__":
    main()
