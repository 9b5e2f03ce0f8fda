#!/usr/bin/env python3
"""What the engine's loop pays beyond its passes' device time, from `inferlab bench --speculative
... --format json` files (their `host_wall` and, with a draft model, `rounds`):

    python3 validation/sync_pass.py FILE.json[:TARGET_LAYERS:DRAFT_LAYERS] ...

1. The sync pass: each pass's host wall median minus its device median (the graph's launch, the
   metadata's upload, the copy back and the wait); the median over every pass of every file is
   `inferlab fit --engine --sync-pass-us` (EngineCosts::sync_pass_s). n-gram drafting has no draft
   pass (its lookup runs on the host) and is skipped.
2. The model switch, from files of a draft model given with their two models' layer counts: in a
   whole round (k draft steps, then the verification) the verification costs more than alone,
   and the round more than its passes alone; the first by the target's layers, the rest (the
   first draft step after the target's pass) by the draft's. The median of the per-layer values
   is `--model-switch-us-per-layer` (EngineCosts::model_switch_per_layer_s).
Exit 2 on a file without host_wall or device timing, or layers without rounds."""
import json
import statistics
import sys


def load(path):
    with open(path) as f:
        d = json.load(f)
    if "host_wall" not in d or not d.get("device_timed"):
        sys.exit(f"sync_pass.py: error: {path}: no host_wall beside device times "
                 "(bench --speculative on a GPU, after 2026-11-28)")
    return d


def median_ms(timing):
    return timing["median_ms"]


def sync_gaps_us(d):
    passes = ["decode_step", "verify"] + (["draft_step"] if d.get("drafter") == "model" else [])
    return {p: 1e3 * (median_ms(d["host_wall"][p]) - median_ms(d[p])) for p in passes}


def switch_per_layer_us(d, path, target_layers, draft_layers):
    rounds = d.get("rounds")
    if not rounds:
        sys.exit(f"sync_pass.py: error: {path}: layers given but no rounds (a draft model's file)")
    wall = d["host_wall"]
    verify_extra = median_ms(rounds["verify_wall"]) - median_ms(wall["verify"])
    draft_extra = (median_ms(rounds["round_wall"]) - d["k"] * median_ms(wall["draft_step"]) -
                   median_ms(rounds["verify_wall"]))
    return {"verify": 1e3 * verify_extra / target_layers,
            "first draft step": 1e3 * draft_extra / draft_layers}


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: sync_pass.py FILE.json[:TARGET_LAYERS:DRAFT_LAYERS] ...")
    syncs, switches = [], []
    for arg in sys.argv[1:]:
        path, *layers = arg.split(":")
        d = load(path)
        g = sync_gaps_us(d)
        syncs += g.values()
        line = path + ": sync " + ", ".join(f"{p} {v:.1f} us" for p, v in g.items())
        if layers:
            if len(layers) != 2:
                sys.exit(f"sync_pass.py: error: {arg}: give FILE:TARGET_LAYERS:DRAFT_LAYERS")
            s = switch_per_layer_us(d, path, int(layers[0]), int(layers[1]))
            switches += s.values()
            line += "; switch a layer: " + ", ".join(f"{p} {v:.2f} us" for p, v in s.items())
        print(line)
    print(f"sync pass: median of {len(syncs)} passes {statistics.median(syncs):.1f} us")
    if switches:
        print(f"model switch: median of {len(switches)} {statistics.median(switches):.2f} us a layer")


if __name__ == "__main__":
    main()
