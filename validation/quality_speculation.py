#!/usr/bin/env python3
"""Speculation at batch 1 on held-out prompts (issue 37): the measured runs against plain decoding,
and the predictions made with the measured acceptance.

Reads RUNS/{plain,ngram,draft}_I.json (`inferlab generate --format json`, greedy, one prompt
each), RUNS/warm_{plain,ngram,draft}_I.json (the same with --warmup-runs 1: the timed run finds
its CUDA graphs and GEMM plans made, as a long-running engine does; the steady state the
simulator models) and, where present, RUNS/costs_{ngram,draft}.json (`inferlab bench
--speculative`). "modes" summarizes the cold runs, "warm_modes" the warm ones.
Per mode: decode time (e2e − TTFT) over decode tokens (tokens − 1) summed over the prompts, the
measured speed-up against plain (plain's time per decode token over the mode's), the acceptance
(accepted / proposed, summed), accepted tokens per round, and alpha: the per-token acceptance for
which a run that proposes k tokens every round and keeps each with probability alpha until the
first rejection (the simulator's model, serve/simulated_executor.cpp) keeps as many per round:
alpha (1 − alpha^k) / (1 − alpha) = accepted / rounds. Greedy decoding must give plain's tokens
(tokens_equal_plain). Each run is one process: plain's runs capture their CUDA graphs (one per
context bucket of a power of two, from 256) inside the timed decode, and the speculative runs make
their verify shapes' plans the same way, so beside measured_speedup stands
measured_speedup_vs_warm_plain: bench's warm median decode step at the prompts' mean context over
the mode's time per decode token.

Predictions with alpha:
  simulator: `inferlab serve` (the simulated executor, --framework inferlab) of REQUESTS requests
    at rate 0, --max-num-seqs 1, the prompts' mean length and NEW tokens, plain and with
    --speculative MODE,k=K,accept=alpha: speed-up = plain's mean TPOT over the mode's.
  formula: speculative_speedup (engine/speculative.hpp) with the costs `bench --speculative`
    measured on the same GPU: tokens per round over (k · draft step + verify) in decode steps.

The simulator's inputs per mode: the measured proposals a round where fewer than k
(simulator_propose; prompt lookup proposes nothing where the context holds no match) and the
acceptance that keeps the measured tokens a round with them (simulator_alpha); `alpha` is the
same for k proposals every round.

usage: python3 validation/quality_speculation.py --runs DIR --inferlab BIN --target CKPT
           --draft CKPT --hardware NAME [--k 4] [--new-tokens 128] [--requests 64] > JSON
       python3 validation/quality_speculation.py --from SUMMARY.json --inferlab BIN --target CKPT
           --draft CKPT --hardware NAME > JSON      (the simulator again over measured rows)
"""
import argparse
import glob
import json
import os
import re
import sys
import subprocess


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def kept_per_round(a, proposed_mean):
    """Draft tokens kept a round when each is accepted with probability a until the first
    rejection, and a round proposes floor(P) or ceil(P) tokens with mean P (the simulator's
    draws, serve/simulated_executor.cpp)."""
    low = int(proposed_mean)
    frac = proposed_mean - low

    def kept(n):
        return sum(a ** i for i in range(1, n + 1))

    return (1 - frac) * kept(low) + frac * kept(low + 1)


def alpha_for(accepted_per_round, proposed_mean):
    """alpha with kept_per_round(alpha, P) = accepted_per_round, by bisection (P = k: the
    simulator's model of a drafter that proposes k tokens every round)."""
    if accepted_per_round <= 0:
        return 0.0
    if accepted_per_round >= proposed_mean:
        return 1.0
    lo, hi = 0.0, 1.0
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if kept_per_round(mid, proposed_mean) < accepted_per_round else (lo, mid)
    return (lo + hi) / 2


def speedup_formula(alpha, k, draft_step, verify):
    tokens = k + 1 if alpha >= 1 else (1 - alpha ** (k + 1)) / (1 - alpha)
    return tokens / (k * draft_step + verify)


def summarize_mode(args, mode, docs, base_runs, plain, decode_rate):
    """One mode's runs against plain decoding's runs of the same set (cold or warm)."""
    # Only prompts both ran, so that each speed-up compares the same prompts.
    common = sorted(i for i in docs if i in base_runs)
    per_token = decode_rate([docs[i] for i in common])
    base = decode_rate([base_runs[i] for i in common])
    row = {
        "runs": len(docs),
        "decode_ms_per_token": per_token * 1e3 if per_token else None,
        "tpot_ms_mean": sum(d["tpot_ms"] for d in docs.values()) / len(docs),
        "ttft_ms_mean": sum(d["ttft_ms"] for d in docs.values()) / len(docs),
        "decode_tokens_per_s_mean": sum(d["decode_tokens_per_s"] for d in docs.values())
        / len(docs),
        "tokens_equal_plain": sum(docs[i]["tokens"] == plain[i]["tokens"] for i in common
                                  if i in plain),
        "compared_prompts": len(common),
    }
    if mode == "plain":
        return row
    row["measured_speedup"] = base / per_token if per_token and base else None
    spec = [docs[i]["speculative"] for i in common if "speculative" in docs[i]]
    rounds = sum(s["rounds"] for s in spec)
    proposed = sum(s["proposed"] for s in spec)
    accepted = sum(s["accepted"] for s in spec)
    row.update(rounds=rounds, proposed=proposed, accepted=accepted,
               acceptance=accepted / proposed if proposed else 0.0,
               proposed_per_round=proposed / rounds if rounds else 0.0,
               accepted_per_round=accepted / rounds if rounds else 0.0,
               verify_ms=sum(s["verify_ms"] for s in spec),
               draft_ms=sum(s["draft_ms"] for s in spec))
    alpha = alpha_for(row["accepted_per_round"], args.k)
    row["alpha"] = alpha
    set_simulator_inputs(mode, row, args.k)
    costs = load(os.path.join(args.runs, "costs_%s.json" % mode))
    if costs:
        step = costs["decode_step"]["median_ms"]
        # Plain decoding warm (bench: graphs captured, plans made, the median step) against
        # this mode's runs.
        row["plain_warm_decode_ms"] = step
        row["measured_speedup_vs_warm_plain"] = step / (per_token * 1e3) if per_token else None
        draft = costs["draft_step"]["median_ms"] / step
        if mode == "ngram":  # one lookup a round, as bench spreads it (speculative_bench)
            draft /= args.k
        verify = costs["verify"]["median_ms"] / step
        row["formula"] = {"decode_step_ms": step, "verify_over_decode": verify,
                          "draft_over_decode_per_token": draft,
                          "speedup": speedup_formula(alpha, args.k, draft, verify)}
    return row


def simulate(args, speculative, prompt_tokens):
    command = [args.inferlab, "serve", "--model", os.path.join(args.target, "config.json"),
               "--hardware", args.hardware, "--framework", "inferlab", "--rate", "0",
               "--requests", str(args.requests), "--max-num-seqs", "1",
               "--input-dist", "fixed:%d" % prompt_tokens,
               "--output-dist", "fixed:%d" % args.new_tokens, "--seed", "37", "--format", "json"]
    if speculative:
        command += ["--speculative", speculative]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120)
    if result.returncode != 0:
        return {"command": " ".join(command), "error": result.stderr.strip()[-500:]}
    d = json.loads(result.stdout)
    return {"command": " ".join(command), "tpot_ms": d["tpot_ms"]["mean"],
            "draft_acceptance": d.get("draft_acceptance"), "cost_model": d.get("cost_model")}


def set_simulator_inputs(mode, row, k):
    """The simulator's inputs for a measured mode: prompt lookup's proposals a round where fewer
    than k (it proposes nothing where the context holds no match; a draft model proposes k but
    near a request's end, which the simulator's scheduler caps itself, so it keeps k), and the
    acceptance that keeps the measured tokens a round with them. The rounds' proposals include
    the requests' last rounds, capped at the tokens left: prompt lookup's mean is low by about
    that (a round or two of ~50 a request here)."""
    propose = float(k)
    if mode == "ngram" and row.get("rounds"):
        propose = min(float(k), row["proposed_per_round"])
    row["simulator_propose"] = propose
    row["simulator_alpha"] = alpha_for(row["accepted_per_round"], propose) if propose > 0 else 0.0


def predict(args, out):
    """The simulator's speed-ups beside the measured ones in `out` (modes and warm_modes): the
    plain run and each mode with its measured proposals and acceptance."""
    p = round(out["prompt_tokens_mean"])
    sim = {"plain": simulate(args, "", p)}
    for mode in ("ngram", "draft"):
        # The acceptance of the warm runs where there are (the same tokens as the cold ones' under
        # greedy decoding), the simulator's with it, set beside both measurements.
        rows = [r for r in (out.get("warm_modes", {}).get(mode), out.get("modes", {}).get(mode))
                if r]
        if not rows:
            continue
        who = "ngram" if mode == "ngram" else "draft=" + args.draft
        first = rows[0]
        propose = first.get("simulator_propose", args.k)
        alpha = first.get("simulator_alpha", first["alpha"])
        spec = "%s,k=%d,accept=%.6f" % (who, args.k, alpha)
        if 0 < propose < args.k:
            spec += ",propose=%.4f" % propose
        sim[mode] = simulate(args, spec, p)
        for row in rows:  # no stale prediction stays beside a failed one
            row.pop("simulator_speedup", None)
            row.pop("simulator_over_measured", None)
        if "tpot_ms" in sim[mode] and "tpot_ms" in sim["plain"]:
            predicted = sim["plain"]["tpot_ms"] / sim[mode]["tpot_ms"]
            for row in rows:
                row["simulator_speedup"] = predicted
                if row.get("measured_speedup"):
                    row["simulator_over_measured"] = predicted / row["measured_speedup"]
    out["simulator"] = sim


def repredict(args):
    """--from SUMMARY: the simulator again over a summary this script wrote (the measured rows as
    they are), for a changed predictor without new runs on the GPU."""
    out = load(args.from_summary)
    if not out or "modes" not in out or out.get("prompt_tokens_mean") is None:
        raise SystemExit("quality_speculation.py: error: %s is not a summary with runs"
                         % args.from_summary)
    # The summary's own run parameters unless given.
    args.k = args.k or out.get("k", 4)
    args.new_tokens = args.new_tokens or out.get("new_tokens", 128)
    for rows in (out["modes"], out.get("warm_modes", {})):
        for mode, row in rows.items():
            if mode != "plain" and "accepted_per_round" in row:
                set_simulator_inputs(mode, row, args.k)
    predict(args, out)
    plain_tpot = out["simulator"]["plain"].get("tpot_ms")
    for key in ("plain_tpot_ms_measured_vs_simulated", "plain_tpot_ms_warm_vs_simulated"):
        if key in out:
            out[key] = [out[key][0], plain_tpot]
    print(json.dumps(out, indent=1))
    if args.max_error is not None:
        check_warm_speedups(out, args.max_error)


def check_warm_speedups(out, max_error):
    """Exit 1 unless every warm speculative mode's simulated speed-up is within max_error
    (relative) of the measured one (an accuracy guard's check)."""
    misses = []
    for mode, row in out.get("warm_modes", {}).items():
        if mode == "plain" or "simulator_over_measured" not in row:
            continue
        error = row["simulator_over_measured"] - 1.0
        print("%s: simulated %.4fx, measured %.4fx (%+.1f%%)"
              % (mode, row["simulator_speedup"], row["measured_speedup"], 100 * error),
              file=sys.stderr)
        if abs(error) > max_error:
            misses.append(mode)
    if misses:
        raise SystemExit("quality_speculation.py: %s beyond %.1f%%" % (", ".join(misses),
                                                                     100 * max_error))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs")
    ap.add_argument("--from", dest="from_summary",
                    help="a summary of this script: predict again, no runs read")
    ap.add_argument("--inferlab", required=True)
    ap.add_argument("--target", required=True)
    ap.add_argument("--draft", required=True)
    ap.add_argument("--hardware", required=True)
    ap.add_argument("--k", type=int, help="default 4 (--from: the summary's)")
    ap.add_argument("--new-tokens", type=int, help="default 128 (--from: the summary's)")
    ap.add_argument("--requests", type=int, default=64)
    ap.add_argument("--max-error", type=float,
                    help="with --from: exit 1 unless each warm mode's simulated speed-up is "
                         "within this fraction of the measured one")
    args = ap.parse_args()
    if args.max_error is not None and not args.from_summary:
        ap.error("--max-error checks a re-prediction: give --from too")
    if args.from_summary:
        return repredict(args)
    if not args.runs:
        ap.error("--runs or --from is required")
    args.k = args.k or 4
    args.new_tokens = args.new_tokens or 128

    runs = {}  # (warm, mode) -> {prompt: doc}
    for path in glob.glob(os.path.join(args.runs, "*_*.json")):
        m = re.fullmatch(r"(warm_)?(plain|ngram|draft)_(\d+)\.json", os.path.basename(path))
        doc = load(path) if m else None
        if doc and doc.get("tokens"):
            runs.setdefault((bool(m.group(1)), m.group(2)), {})[int(m.group(3))] = doc
    plain = runs.get((False, "plain"), {}) or runs.get((True, "plain"), {})
    out = {"k": args.k, "new_tokens": args.new_tokens, "hardware": args.hardware, "modes": {},
           "warm_modes": {}}
    prompt_tokens = [r["prompt_tokens"] for r in plain.values()]
    out["prompts"] = len(plain)
    out["prompt_tokens_mean"] = sum(prompt_tokens) / len(prompt_tokens) if prompt_tokens else None

    def decode_rate(docs):  # seconds per decode token, summed over the runs
        time_s = sum((d["e2e_ms"] - d["ttft_ms"]) / 1e3 for d in docs)
        tokens = sum(len(d["tokens"]) - 1 for d in docs)
        return time_s / tokens if tokens else None

    for warm in (False, True):
        base_runs = runs.get((warm, "plain"), {})
        for mode in ("plain", "ngram", "draft"):
            docs = runs.get((warm, mode), {})
            if not docs or not base_runs:
                continue
            out["warm_modes" if warm else "modes"][mode] = summarize_mode(
                args, mode, docs, base_runs, plain, decode_rate)
    plain_per_token = decode_rate(list(plain.values()))

    if out["prompt_tokens_mean"] is not None:
        predict(args, out)
        plain_tpot = out["simulator"]["plain"].get("tpot_ms")
        if plain_per_token and plain_tpot:
            out["plain_tpot_ms_measured_vs_simulated"] = [plain_per_token * 1e3, plain_tpot]
        warm_plain = decode_rate(list(runs.get((True, "plain"), {}).values()))
        if warm_plain and plain_tpot:
            out["plain_tpot_ms_warm_vs_simulated"] = [warm_plain * 1e3, plain_tpot]
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
