#!/usr/bin/env python3
"""A mixture of experts' measured routing, from the engine's profiles (`inferlab bench --profile`
records each profiled pass's routing under `moe_routing`: engine/routing_stats.hpp).

Tokens of one sequence route alike, so the routing is kept as the experts one sequence of t
tokens reaches (model/moe_routing.hpp): the fit split's single-sequence prefills. Sequences then
draw their experts independently: b sequences reach E (1 - (1 - R(t)/E)^b). This script writes
that curve and checks the rule on every other point (held-out points, batches of sequences,
decode steps), beside uniform routing's E (1 - (1 - k/E)^(b t)).

  python3 validation/moe_routing.py PROFILE.json [--write data/routing/<model>.json]
"""
import argparse
import json
import math
import sys


def routing_points(profile):
    for p in profile["points"]:
        r = p.get("moe_routing")
        if r and r.get("layers", 0) > 0:
            yield p, r


def experts_and_top_k(profile):
    for _, r in routing_points(profile):
        experts = len(r["sorted_loads_sum"])
        top_k = round(sum(r["sorted_loads_sum"]) / (r["layers"] * r["tokens"]))
        return experts, top_k
    sys.exit("moe_routing.py: the profile has no point with moe_routing")


def sequence_reached(curve, experts, top_k, tokens):
    """model/moe_routing.cpp's sequence_experts_reached, for the check."""
    if not curve:
        return experts * (1 - (1 - top_k / experts) ** tokens)
    if tokens <= 1:
        return float(top_k)
    below = (1.0, float(top_k))
    for at, reached in curve:
        if tokens <= at:
            span = math.log(at) - math.log(below[0])
            f = (math.log(tokens) - math.log(below[0])) / span if span > 0 else 1.0
            return below[1] + f * (reached - below[1])
        below = (float(at), reached)
    return curve[-1][1]


def step_reached(curve, experts, top_k, batch, tokens):
    one = min(experts, sequence_reached(curve, experts, top_k, tokens))
    return experts * (1 - (1 - one / experts) ** batch)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("profile")
    ap.add_argument("--write", help="the routing file to write (data/routing/<model>.json)")
    args = ap.parse_args()
    profile = json.load(open(args.profile))
    experts, top_k = experts_and_top_k(profile)
    curve = sorted(
        (p["tokens"], r["experts_reached_mean"])
        for p, r in routing_points(profile)
        if p["split"] == "fit" and p["phase"] == "prefill" and p["batch"] == 1)
    print(f"{profile['model']}: {top_k} of {experts} experts; one sequence's experts, fit split:")
    for t, r in curve:
        print(f"  {t:5d} tokens: {r:7.2f}")
    print(f"{'point':<22} {'split':<8} {'measured':>9} {'measured routing':>17} {'uniform':>9}")
    errors, uniform_errors = [], []
    for p, r in routing_points(profile):
        if p["split"] == "fit" and p["phase"] == "prefill" and p["batch"] == 1:
            continue  # the curve itself
        measured = r["experts_reached_mean"]
        ours = step_reached(curve, experts, top_k, p["batch"], p["tokens"])
        uniform = step_reached([], experts, top_k, p["batch"], p["tokens"])
        errors.append(ours / measured - 1)
        uniform_errors.append(uniform / measured - 1)
        label = f"{p['phase']} b{p['batch']} t{p['tokens']} c{p['context']}"
        print(f"{label:<22} {p['split']:<8} {measured:9.2f} {ours:17.2f} {uniform:9.2f}")
    if errors:
        worst = max(errors, key=abs)
        worst_uniform = max(abs(e) for e in uniform_errors)
        print(f"worst error in experts reached: measured routing {worst:+.1%}, uniform "
              f"{worst_uniform:.1%} over {len(errors)} points not in the curve")
    else:
        print("no point outside the curve to check it on")
    if not curve:
        sys.exit("moe_routing.py: no single-sequence prefill in the fit split to build the curve")
    if args.write:
        out = {
            "model": profile["model"],
            "num_experts": experts,
            "experts_per_token": top_k,
            "sequence_experts_reached": [[t, round(r, 3)] for t, r in curve],
            "source": (f"experts one sequence's prompt reaches, mean over the layers: the fit split's "
                       f"single-sequence prefills of `inferlab bench --profile` on {profile['device_name']}, "
                       f"{profile['measured_at']} (engine random weights of the default seed; "
                       f"validation/moe_routing.py)"),
        }
        with open(args.write, "w") as f:
            json.dump(out, f, indent=2)
            f.write("\n")
        print(f"wrote {args.write}")


if __name__ == "__main__":
    main()
