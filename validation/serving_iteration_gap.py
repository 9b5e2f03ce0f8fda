#!/usr/bin/env python3
"""Where the engine's serving iterations part from the simulator's (MEASUREMENTS §25).

1. Median iteration time by the prefill tokens in it (none, 1-256, 257-768, over 768), measured
   (`serve --executor engine --iterations-csv`) against simulated (`serve --executor sim
   --iterations-csv` on the same stream).
2. In the measured run, the median time per row of iterations with a prefill chunk and 129-600
   rows, the first time their row count comes and when it comes again, for row counts that are a
   multiple of 8 and the others (MEASUREMENTS §26: the first time is cuBLASLt's heuristic query
   and lazy kernel loading, which `--gemm-warmup on` moves to start-up).
3. From a kernel-profiled run (`--kernel-profile-csv`, gzipped), the median GEMM time per row of
   mixed iterations of 129-512 rows, for row counts that are a multiple of 8 and the others.

usage: serving_iteration_gap.py MEASURED.csv SIMULATED.csv [KERNELS.csv.gz ...]
"""
import csv
import gzip
import statistics
import sys
from collections import defaultdict


def prefill_bin(tokens):
    if tokens == 0:
        return "no prefill"
    if tokens <= 256:
        return "1-256"
    return "257-768" if tokens <= 768 else "over 768"


def medians_by_bin(path):
    bins = defaultdict(list)
    with open(path) as f:
        for row in csv.DictReader(f):
            bins[prefill_bin(int(row["prefill_tokens"]))].append(float(row["duration_ms"]))
    return {name: statistics.median(values) for name, values in bins.items()}


def first_and_repeat_us_per_row(path):
    seen, per_row = set(), defaultdict(list)  # (repeat, multiple of 8) -> us per row
    with open(path) as f:
        for row in csv.DictReader(f):
            prefill, decodes = int(row["prefill_tokens"]), int(row["decode_seqs"])
            rows = prefill + decodes
            if prefill > 0 and 129 <= rows <= 600:
                per_row[(rows in seen, rows % 8 == 0)].append(
                    1e3 * float(row["duration_ms"]) / rows)
            seen.add(rows)
    return per_row


def gemm_ms_per_row(paths):
    per_row = defaultdict(list)  # multiple of 8 -> GEMM ms per row
    for path in paths:
        iterations = defaultdict(float)
        with gzip.open(path, "rt") as f:
            for row in csv.DictReader(f):
                if row["class"].startswith("gemm"):
                    key = (int(row["iteration"]), int(row["prefill_tokens"]),
                           int(row["decode_seqs"]))
                    iterations[key] += float(row["ms"])
        for (_, prefill, decodes), ms in iterations.items():
            rows = prefill + decodes
            if prefill > 0 and 129 <= rows <= 512:
                per_row[rows % 8 == 0].append(ms / rows)
    return per_row


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    measured, simulated = medians_by_bin(sys.argv[1]), medians_by_bin(sys.argv[2])
    print("prefill tokens  measured ms  simulated ms")
    for name in ["no prefill", "1-256", "257-768", "over 768"]:
        if name in measured and name in simulated:
            print(f"{name:14s}  {measured[name]:11.2f}  {simulated[name]:12.2f}")
    occurrences = first_and_repeat_us_per_row(sys.argv[1])
    for (repeat, multiple), values in sorted(occurrences.items()):
        print(f"{'again' if repeat else 'first time'}, rows "
              f"{'a multiple of 8' if multiple else 'not a multiple of 8'}: {len(values)} "
              f"iterations, median {statistics.median(values):.2f} us per row")
    if len(sys.argv) > 3:
        per_row = gemm_ms_per_row(sys.argv[3:])
        for multiple, label in [(True, "rows a multiple of 8"), (False, "other row counts")]:
            values = per_row[multiple]
            if values:
                print(f"{label}: {len(values)} iterations, median GEMM "
                      f"{statistics.median(values):.4f} ms per row")


if __name__ == "__main__":
    main()
