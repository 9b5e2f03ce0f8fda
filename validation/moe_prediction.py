#!/usr/bin/env python3
"""The engine's mixture-of-experts steps and serving, predicted at this commit against what the
engine measured (issue 40; an accuracy guard in CTest).

--bench: `inferlab bench --format json` rows of validation/moe_gpu.py's speed-engine stage
  (Mixtral 8x7B on one H200: batch 1 and 32, a 1024-token prompt, 16 decode steps). Each row's
  prefill and mean decode step (TPOT) against `inferlab predict --framework inferlab` at the same
  model, hardware, batch, input and output.
--serve: validation/serve_engine_vs_sim.py's output. Each load's engine p50 TTFT, TPOT and
  end-to-end latency against `inferlab serve --executor sim` rerun here with the same command
  the script ran (the recorded rate, requests, distributions and limits).
Prints every comparison; exits 1 when one is off by more than --max-error (a fraction) for its
kind (--max-error prefill=0.14,decode=0.085,serve=0.105), 2 on bad input.

Usage:  python3 validation/moe_prediction.py --inferlab build/inferlab --hardware h200
            --bench validation/data/moe_h200_2026-11-28/call5/engine.json
            --serve validation/data/moe_h200_2026-11-28/call5/serve.json
            --max-error prefill=0.14,decode=0.085,serve=0.105
"""
import argparse
import json
import subprocess
import sys


def run_json(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.stderr.write(f"{' '.join(cmd)} failed ({r.returncode}):\n{r.stderr}")
        sys.exit(2)
    return json.loads(r.stdout)


def bench_rows(args):
    rows = [row for path in args.bench for row in json.load(open(path))]
    out = []
    for row in rows:
        b = row["bench"]
        # bench's JSON names its split since 2026-11-29; rows from before carry it beside.
        tp = int(b.get("tp", row.get("tp", 1)))
        predicted = run_json([args.inferlab, "predict", "--model", b["model"], "--hardware",
                              args.hardware, "--framework", "inferlab", "--batch",
                              str(b["batch"]), "--input", str(b["input_tokens"]), "--output",
                              str(b["output_tokens"]), "--tp", str(tp), "--format", "json"])
        split = f" tp {tp}" if tp > 1 else ""
        out.append(("prefill", f"{b['model']}{split} batch {b['batch']} prefill {b['input_tokens']}",
                    predicted["prefill_ms"], b["prefill_ms"]))
        out.append(("decode", f"{b['model']}{split} batch {b['batch']} TPOT",
                    predicted["tpot_ms"], b["tpot_ms"]))
    return out


def serve_rows(args):
    data = json.load(open(args.serve))
    out = []
    for run in data["runs"]:
        engine = run["engine"]
        cmd = [args.inferlab, "serve", "--model", data["model"], "--hardware", data["hardware"],
               "--executor", "sim", "--framework", "inferlab", "--cost", "calibrated",
               "--cuda-graphs", "on", "--policy", "chunked", "--max-num-seqs", "256",
               "--max-num-batched-tokens", "2048", "--kv-tokens", str(data["kv_tokens"]),
               "--rate", str(run["rate_per_s"]), "--requests", str(data["requests"]),
               "--input-dist", data["input_dist"], "--output-dist", data["output_dist"],
               "--seed", "3", "--format", "json"]
        sim = run_json(cmd)
        for field in ("ttft_ms", "tpot_ms", "e2e_ms"):
            out.append(("serve", f"serve {run['load']} {field} p50", sim[field]["p50"],
                        engine[field]["p50"]))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--inferlab", required=True)
    ap.add_argument("--hardware", default="h200")
    ap.add_argument("--bench", nargs="+", help="engine.json files (rows of `inferlab bench` JSON)")
    ap.add_argument("--serve")
    ap.add_argument("--max-error", default="prefill=0.1,decode=0.1,serve=0.1")
    args = ap.parse_args()
    try:
        bounds = {k: float(v) for k, v in (p.split("=") for p in args.max_error.split(","))}
    except ValueError:
        sys.exit(f"--max-error: expected kind=fraction,..., got {args.max_error!r}")
    rows = (bench_rows(args) if args.bench else []) + (serve_rows(args) if args.serve else [])
    if not rows:
        sys.exit("nothing to compare: give --bench and/or --serve")
    failed = 0
    for kind, what, predicted, measured in rows:
        error = predicted / measured - 1.0
        bound = bounds.get(kind, 0.1)
        ok = abs(error) <= bound
        failed += not ok
        print(f"{what}: predicted {predicted:.3f} ms, measured {measured:.3f} ms, "
              f"{100 * error:+.1f}% (bound {100 * bound:.1f}%){'' if ok else '  FAIL'}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
