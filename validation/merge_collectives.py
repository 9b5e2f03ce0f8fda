#!/usr/bin/env python3
"""Refines a hardware profile's "collectives" curves with a later `inferlab probe
--collectives-only` run of the same machine: a curve (devices, collective, library, launch mode)
takes the later run's message sizes that it lacks, each stamped with that run's time, when the
two runs agree at every size both measured (medians within --tolerance of each other, default
10%). A curve the runs disagree on keeps its own sizes only, and a curve the profile lacks is
not added (the profile says which curves it prices).

Why: the probe of 2026-11-27 measured powers of 4 (1, 4, 16 MB ...), that of 2026-11-28 every
power of 2. Between 1 and 2 MB NCCL's all-reduce over 2 GPUs changes protocol (14 µs at 1 MB,
28 at 2 MB in a graph): interpolated from 1 to 4 MB, a 2 MB call is priced at 20 µs. On 2026-11-28
the 4-GPU NCCL calls ran 4.5 µs slower at 1 MB and 29 µs at 16 MB than the day before (a run the
other curves do not reproduce), so those curves are not refined (docs/MEASUREMENTS.md §42).

Usage: python3 validation/merge_collectives.py RUN.json PROFILE.json [--tolerance 0.10]
                                               [--measured-at TIME]
(--measured-at for a run whose section does not say when it was measured: the probe wrote none
before 2026-11-28; that run's is the time its stage finished in its progress.txt.)
Running it twice changes nothing.
"""
import argparse
import json


def curve_key(point):
    return (point["devices"], point["collective"], point["library"], point["mode"])


def by_curve(points):
    curves = {}
    for p in points:
        curves.setdefault(curve_key(p), {})[p["bytes"]] = p
    return curves


def agree(ours, theirs, tolerance):
    """Relative differences at the shared sizes, and whether all are within tolerance."""
    shared = sorted(set(ours) & set(theirs))
    diffs = [abs(theirs[b]["median_s"] / ours[b]["median_s"] - 1.0) for b in shared]
    return shared, diffs, bool(shared) and max(diffs) <= tolerance


def interleave(points, new_points):
    """`points` in their order, each curve's new points placed among its own by size."""
    out, pending = [], {key: sorted(ps, key=lambda p: p["bytes"]) for key, ps in new_points.items()}
    for p in points:
        waiting = pending.get(curve_key(p), [])
        while waiting and waiting[0]["bytes"] < p["bytes"]:
            out.append(waiting.pop(0))
        out.append(p)
    for key in sorted(pending):  # past each curve's largest size
        last = max(i for i, p in enumerate(out) if curve_key(p) == key)
        out[last + 1:last + 1] = pending[key]
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run")
    parser.add_argument("profile")
    parser.add_argument("--tolerance", type=float, default=0.10)
    parser.add_argument("--measured-at")
    args = parser.parse_args()
    with open(args.run) as f:
        run = json.load(f)
    with open(args.profile) as f:
        profile = json.load(f)
    later = run.get("collectives", run)
    measured_at = later.get("measured_at", args.measured_at)
    if not measured_at:
        parser.error(args.run + " does not say when it was measured: give --measured-at")
    section = profile["collectives"]
    ours, theirs = by_curve(section["points"]), by_curve(later["points"])
    refined, new_points = [], {}
    for key in sorted(theirs):
        if key not in ours:
            continue
        shared, diffs, ok = agree(ours[key], theirs[key], args.tolerance)
        worst = max(diffs) if diffs else float("nan")
        added = [b for b in sorted(theirs[key]) if b not in ours[key]] if ok else []
        print("{} GPUs {} {} {}: {} shared sizes, worst {:.1%}: {}".format(
            *key, len(shared), worst,
            "{} sizes added".format(len(added)) if ok else "disagree, not refined"))
        for b in added:
            point = dict(theirs[key][b], measured_at=measured_at)
            new_points.setdefault(key, []).append(dict(sorted(point.items())))
        if added:
            refined.append("{} GPUs {} {} {}".format(*key))
    section["points"] = interleave(section["points"], new_points)
    if refined:
        note = {"measured_at": measured_at, "source": later.get("source", args.run),
                "tolerance": args.tolerance, "curves": refined,
                "merged_by": "validation/merge_collectives.py"}
        notes = section.setdefault("refined_by", [])
        if note not in notes:
            notes.append(note)
    with open(args.profile, "w") as f:
        json.dump(profile, f, indent=1)  # the file's own key order


if __name__ == "__main__":
    main()
