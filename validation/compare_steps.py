#!/usr/bin/env python3
"""Predicted vs measured whole steps (CPU only; needs a built inferlab).

For every step in a torch_reference JSON (validation/torch_reference.py), runs
`inferlab step --framework pytorch` with CUDA graphs on (compared with the graph replay) and off
(compared with the eager run), and prints the error of each.

Usage: python3 validation/compare_steps.py validation/data/torch_reference_h100_2026-11-22.json \
           [--hardware h100-sxm] [--inferlab build/inferlab]
"""
import argparse
import json
import subprocess


def predict(inferlab, hardware, row, graphs):
    args = [inferlab, "step", "--model", row["model"], "--hardware", hardware, "--framework",
            "pytorch", "--cuda-graphs", "on" if graphs else "off", "--batch", str(row["batch"]),
            "--phase", row["phase"], "--format", "json"]
    args += ["--tokens", str(row["tokens"])] if row["phase"] == "prefill" else \
            ["--context", str(row["context"])]
    return json.loads(subprocess.run(args, check=True, capture_output=True, text=True).stdout)["ms"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("data")
    ap.add_argument("--hardware", default="h100-sxm")
    ap.add_argument("--inferlab", default="build/inferlab")
    a = ap.parse_args()
    ref = json.load(open(a.data))
    print(f"{'model':14} {'phase':8} {'batch':>5} {'len':>5} {'graph_ms':>9} {'pred_ms':>8} "
          f"{'err':>7} {'eager_ms':>9} {'pred_ms':>8} {'err':>7}")
    errs = {"graph": [], "eager": []}
    for row in ref["steps"]:
        length = row.get("tokens", row.get("context"))
        out = [f"{row['model']:14} {row['phase']:8} {row['batch']:5} {length:5}"]
        for mode, graphs in (("graph", True), ("eager", False)):
            measured = row[mode]["median_s"] * 1e3
            predicted = predict(a.inferlab, a.hardware, row, graphs)
            err = (predicted - measured) / measured
            errs[mode].append(abs(err))
            out.append(f"{measured:9.3f} {predicted:8.3f} {100 * err:+6.1f}%")
        print(" ".join(out))
    for mode, e in errs.items():
        print(f"{mode}: MAPE {100 * sum(e) / len(e):.1f}%  worst {100 * max(e):.1f}%  ({len(e)} steps)")


if __name__ == "__main__":
    main()
