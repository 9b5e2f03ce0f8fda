#!/usr/bin/env python3
"""Per-stage times of the persistent decode kernel from its trace (INFERLAB_ENGINE_DECODE_TRACE).

The trace is one decode pass: for every block, layer and stage (A norm + QKV, B attention,
C O + residual, D norm + gate/up, E down + residual) the globaltimer stamp (ns) when the block
finished the stage and when it passed the grid barrier after it. A stage's work is the time from
the previous barrier's passing to the stage's end; its wait, from the end to the barrier's
passing (the last block to arrive waits the barrier's own latency). Medians and tails over all
(block, layer) pairs but the first layer's stage A (no previous barrier) and, for the waits, the
last layer's stage E (no barrier after it).

Usage: python3 validation/decode_trace_summary.py TRACE.csv [...]
"""
import csv
import statistics
import sys
from collections import defaultdict


def summary(path):
    by = defaultdict(dict)
    for r in csv.DictReader(open(path)):
        by[(int(r["block"]), int(r["layer"]))][r["stage"]] = (int(r["end_ns"]), int(r["barrier_ns"]))
    blocks = sorted({b for b, _ in by})
    layers = sorted({l for _, l in by})
    order = "ABCDE"
    work, wait = defaultdict(list), defaultdict(list)
    for l in layers:
        for b in blocks:
            d = by[(b, l)]
            previous = by[(b, l - 1)]["E"][1] if l > 0 else None
            for i, s in enumerate(order):
                start = previous if i == 0 else d[order[i - 1]][1]
                if start is None:
                    continue
                work[s].append(d[s][0] - start)
                if not (s == "E" and l == layers[-1]):  # the last stage has no barrier after it
                    wait[s].append(d[s][1] - d[s][0])
    print(path)
    for s in order:
        w, q = sorted(work[s]), sorted(wait[s])
        print("  %s work median %.2f us, p90 %.2f, max %.2f | barrier wait median %.2f, p10 %.2f"
              % (s, statistics.median(w) / 1e3, w[int(0.9 * len(w))] / 1e3, w[-1] / 1e3,
                 statistics.median(q) / 1e3, q[int(0.1 * len(q))] / 1e3))
    ends = [by[(0, l)]["E"][1] for l in layers]
    steps = [ends[i] - ends[i - 1] for i in range(1, len(ends))]
    print("  layer median %.1f us, all layers %.3f ms (block 0)" % (statistics.median(steps) / 1e3,
                                                                   ends[-1] / 1e6))


if __name__ == "__main__":
    for p in sys.argv[1:]:
        summary(p)
