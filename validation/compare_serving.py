#!/usr/bin/env python3
"""Compares `inferlab serve` with the real server of serving_reference.py (runs on the CPU
machine; standard library only).

For each measured rate it writes the requests as a JSONL trace, runs
`build/inferlab serve --trace ... --policy vllm --framework pytorch --cuda-graphs off` with the
reference's limits, and prints measured against simulated TTFT, TPOT and end-to-end latency
(p50, p90, p99, mean), decode and prefill iteration times, and busy time.
Usage:  python3 validation/compare_serving.py [validation/data/serving_reference_h100_2026-11-22.json]
"""
import csv
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def pct(values, q):
    v = sorted(values)
    rank = q / 100 * (len(v) - 1)
    lo = int(rank)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (rank - lo) * (v[hi] - v[lo])


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        ROOT, "validation", "data", "serving_reference_h100_2026-11-22.json")
    ref = json.load(open(path))
    print(f"{ref['model']} on {ref['device']}, torch {ref['torch']}, {ref['measured_at']}")
    tmp = tempfile.mkdtemp()
    for run in ref["runs"]:
        rate, reqs, outs = run["rate_per_s"], run["requests"], run["outcomes"]
        trace, its_csv = os.path.join(tmp, f"trace_{rate}.jsonl"), os.path.join(tmp, f"it_{rate}.csv")
        with open(trace, "w") as f:
            for r in reqs:
                f.write(json.dumps(r) + "\n")
        sim = json.loads(subprocess.check_output([
            os.path.join(ROOT, "build", "inferlab"), "serve", "--model", ref["model"],
            "--hardware", "h100-sxm", "--trace", trace, "--policy", "vllm", "--framework",
            "pytorch", "--cuda-graphs", "off", "--max-num-seqs", str(ref["max_slots"]),
            "--max-num-batched-tokens", str(ref["token_budget"]), "--format", "json",
            "--iterations-csv", its_csv]))
        measured = {
            "ttft": [o["first_token_s"] - r["arrival_s"] for r, o in zip(reqs, outs)],
            "tpot": [(o["finish_s"] - o["first_token_s"]) / (r["output_tokens"] - 1)
                     for r, o in zip(reqs, outs)],
            "e2e": [o["finish_s"] - r["arrival_s"] for r, o in zip(reqs, outs)],
        }
        print(f"\n{rate:g} requests/s, {len(reqs)} requests (ms; error = simulated / measured - 1)")
        print(f"{'metric':6} {'measured p50/p90/p99/mean':>34} {'simulated p50/p90/p99/mean':>34}"
              f" {'err p50':>8} {'err p99':>8} {'err mean':>9}")
        for name, values in measured.items():
            m = [1e3 * pct(values, q) for q in (50, 90, 99)] + [1e3 * statistics.mean(values)]
            s = [sim[name + "_ms"][k] for k in ("p50", "p90", "p99", "mean")]
            print(f"{name:6} {'/'.join(f'{x:.1f}' for x in m):>34} {'/'.join(f'{x:.1f}' for x in s):>34}"
                  f" {100 * (s[0] / m[0] - 1):+7.1f}% {100 * (s[2] / m[2] - 1):+7.1f}%"
                  f" {100 * (s[3] / m[3] - 1):+8.1f}%")
        its = run["iterations"]
        rows = list(csv.DictReader(open(its_csv)))
        dec = [1e3 * i["duration_s"] for i in its if i["decode_seqs"] > 0]
        sdec = [float(r["duration_ms"]) for r in rows if int(r["decode_seqs"]) > 0]
        pre = [1e5 * i["duration_s"] / i["prefill_tokens"] for i in its if i["prefill_tokens"] > 0]
        spre = [100 * float(r["duration_ms"]) / int(r["prefill_tokens"]) for r in rows
                if int(r["prefill_tokens"]) > 0]
        busy, sbusy = sum(i["duration_s"] for i in its), sum(float(r["duration_ms"]) for r in rows) / 1e3
        print(f"decode iteration median: measured {statistics.median(dec):.2f} ms ({len(dec)}), "
              f"simulated {statistics.median(sdec):.2f} ms ({len(sdec)})")
        print(f"prefill iteration median per 100 tokens: measured {statistics.median(pre):.2f} ms "
              f"({len(pre)}), simulated {statistics.median(spre):.2f} ms ({len(spre)})")
        print(f"busy time: measured {busy:.2f} s, simulated {sbusy:.2f} s ({100 * (sbusy / busy - 1):+.1f}%)")


if __name__ == "__main__":
    main()
