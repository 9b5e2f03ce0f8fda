#!/usr/bin/env python3
"""Re-runs every CPU-side figure quoted in README.md and docs/*.md and fails when a
quoted number no longer matches (python3 standard library only).

The manifest (docs/figures.json) lists
  runs:    named commands, each run once: an `inferlab` command line with `--format json`
           (kind "inferlab", the default), the same with plain-text output matched by regexes
           (kind "inferlab_text"), a Google Benchmark program from the bench folder (kind
           "bench"), the wall time of an inferlab command (kind "wall"), a shipped data file
           read as JSON (kind "file"), or the real-server comparison of
           validation/compare_serving.py recomputed here (kind "serving_reference");
  figures: one entry per quoted figure: the run; a path into its JSON (`a.b{key=value}.c`:
           the one list entry whose key is value; `{k1=v1&k2=v2}` for several keys,
           `{key^=prefix}` for a prefix, `[3]` for an index), a regex with one group,
           `pooled_mape` (paths of `validate` groups whose MAPEs are pooled, weighted by their
           case counts) or `ratio_of` (two [run, path] pairs: the first over the second, plus
           an optional `offset`); a scale (100 for a share quoted in %); the quoted value as a
           string; its tolerance; and where it is quoted.
Tolerance: by default half a unit of the quoted value's last digit (the figure must round to
what the docs say); `"tol": {"abs": x}`, `{"rel": x}` or `{"factor": f}` (timings: the measured
value within [value / f, value x f]) state another one.
Where: each figure names the file, optionally a section (a heading's text; the check looks
between that heading and the next heading of the same or a higher level) and the exact text
that must appear there, so a figure changed in the docs but not in the manifest fails too.

Usage: scripts/figures.py --inferlab build-cpu/inferlab [--bench-dir build-cpu/bench]
                          [--manifest docs/figures.json] [--only ID_PREFIX] [--list]
                          [--no-timings]
Without --bench-dir the benchmark figures are skipped (and said so). --no-timings (CTest's
form) checks values only: timing figures (runs of kind bench or wall, and tolerances given as a
factor) are not run, only their quotes looked up in the docs, since a busy 2-core machine moves a
timing by 3x; run this script without it, on a quiet machine, to check them. Exit 0: every figure
matches; 1: some do not (each is listed with the measured value); 2: bad manifest or a run
that failed.
"""
import argparse
import csv
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class ManifestError(Exception):
    pass


# ---------------------------------------------------------------------------------------------
# Runs
def run_checked(argv, what):
    try:
        proc = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True)
    except OSError as e:
        raise ManifestError(f"{what}: cannot run {argv[0]}: {e}")
    if proc.returncode != 0:
        raise ManifestError(f"{what}: exit {proc.returncode}: {' '.join(argv)}\n{proc.stderr[-2000:]}")
    return proc.stdout


def pct(values, q):
    """Linear-interpolated percentile, as validation/compare_serving.py computes it."""
    v = sorted(values)
    rank = q / 100 * (len(v) - 1)
    lo = int(rank)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (rank - lo) * (v[hi] - v[lo])


def serving_reference(inferlab, spec):
    """validation/compare_serving.py's comparison, as JSON: per rate, measured and simulated
    p50/p90/p99/mean of ttft/tpot/e2e (ms) and the error of the simulation (simulated /
    measured - 1, in %), decode iteration medians and prefill per 100 tokens."""
    ref = json.load(open(os.path.join(ROOT, spec["data"])))
    out = {}
    tmp = tempfile.mkdtemp(prefix="figures_")
    for run in ref["runs"]:
        rate, reqs, outs = run["rate_per_s"], run["requests"], run["outcomes"]
        trace = os.path.join(tmp, f"trace_{rate}.jsonl")
        its_csv = os.path.join(tmp, f"it_{rate}.csv")
        with open(trace, "w") as f:
            for r in reqs:
                f.write(json.dumps(r) + "\n")
        sim = json.loads(run_checked([
            inferlab, "serve", "--model", ref["model"], "--hardware", "h100-sxm", "--trace", trace,
            "--policy", "vllm", "--framework", "pytorch", "--cuda-graphs", "off", "--max-num-seqs",
            str(ref["max_slots"]), "--max-num-batched-tokens", str(ref["token_budget"]),
            "--format", "json", "--iterations-csv", its_csv], "serve"))
        measured = {
            "ttft": [o["first_token_s"] - r["arrival_s"] for r, o in zip(reqs, outs)],
            "tpot": [(o["finish_s"] - o["first_token_s"]) / (r["output_tokens"] - 1)
                     for r, o in zip(reqs, outs)],
            "e2e": [o["finish_s"] - r["arrival_s"] for r, o in zip(reqs, outs)],
        }
        entry = {}
        for name, values in measured.items():
            m = {f"p{q}": 1e3 * pct(values, q) for q in (50, 90, 99)}
            m["mean"] = 1e3 * statistics.mean(values)
            s = {k: sim[name + "_ms"][k] for k in ("p50", "p90", "p99", "mean")}
            entry[name] = {"measured_ms": m, "simulated_ms": s,
                           "error_pct": {k: 100 * (s[k] / m[k] - 1) for k in m}}
        rows = list(csv.DictReader(open(its_csv)))
        its = run["iterations"]
        dec = [1e3 * i["duration_s"] for i in its if i["decode_seqs"] > 0]
        sdec = [float(r["duration_ms"]) for r in rows if int(r["decode_seqs"]) > 0]
        pre = [1e5 * i["duration_s"] / i["prefill_tokens"] for i in its if i["prefill_tokens"] > 0]
        spre = [100 * float(r["duration_ms"]) / int(r["prefill_tokens"]) for r in rows
                if int(r["prefill_tokens"]) > 0]
        entry["decode_iteration_ms"] = {
            "measured": statistics.median(dec), "simulated": statistics.median(sdec),
            "error_pct": 100 * (statistics.median(sdec) / statistics.median(dec) - 1),
            "measured_p90": pct(dec, 90), "measured_p99": pct(dec, 99)}
        entry["prefill_per_100_tokens_ms"] = {"measured": statistics.median(pre),
                                              "simulated": statistics.median(spre)}
        out[f"{rate:g}"] = entry
    return out


def execute(run_id, spec, args):
    kind = spec.get("kind", "inferlab")
    if kind == "inferlab":
        return json.loads(run_checked([args.inferlab] + spec["args"], run_id))
    if kind == "inferlab_text":
        return run_checked([args.inferlab] + spec["args"], run_id)
    if kind == "wall":
        start = time.perf_counter()
        run_checked([args.inferlab] + spec["args"], run_id)
        return {"wall_s": time.perf_counter() - start}
    if kind == "bench":
        if not args.bench_dir:
            return None
        program = os.path.join(args.bench_dir, spec["program"])
        return json.loads(run_checked([program, "--benchmark_format=json"] + spec.get("args", []),
                                      run_id))
    if kind == "file":
        return json.load(open(os.path.join(ROOT, spec["path"])))
    if kind == "serving_reference":
        return serving_reference(args.inferlab, spec)
    raise ManifestError(f"run {run_id}: unknown kind '{kind}'")


# ---------------------------------------------------------------------------------------------
# Figures
TOKEN = re.compile(r"([^.\[\]{}]+)|\[(\d+)\]|\{([^}]+)\}")


def lookup(doc, path):
    for name, index, selector in TOKEN.findall(path):
        if name:
            if not isinstance(doc, dict) or name not in doc:
                raise KeyError(f"no '{name}' in path {path}")
            doc = doc[name]
        elif selector:
            pairs = [part.split("=", 1) for part in selector.split("&")]
            # `key^=value`: the key's value starts with value (benchmark names carry
            # version-dependent suffixes such as /min_time:2.000).
            hits = [d for d in doc if all(
                str(d.get(k[:-1])).startswith(v) if k.endswith("^") else str(d.get(k)) == v
                for k, v in pairs)]
            if len(hits) != 1:
                raise KeyError(f"{{{selector}}} matches {len(hits)} entries in path {path}")
            doc = hits[0]
        else:
            doc = doc[int(index)]
    return doc


def default_tolerance(text):
    """Half a unit of the last quoted digit: "1.7" -> 0.05, "733.2" -> 0.05, "1,801" -> 0.5."""
    digits = text.replace(",", "").lstrip("+-−")
    decimals = len(digits.split(".")[1]) if "." in digits else 0
    return 0.5 * 10 ** (-decimals) * (1 + 1e-9)


def parse_number(text):
    return float(text.replace(",", "").replace("−", "-"))


def is_timing(figure, run):
    """A figure that is a time on this machine: a benchmark's or a command's wall time, or one
    whose tolerance is a factor."""
    return run.get("kind") in ("bench", "wall") or "factor" in (figure.get("tol") or {})


def within(measured, figure):
    quoted = parse_number(figure["value"])
    tol = figure.get("tol")
    if tol is None:
        bound = default_tolerance(figure["value"])
        return abs(measured - quoted) <= bound, f"±{bound:.3g} (quoted rounding)"
    if "abs" in tol:
        return abs(measured - quoted) <= tol["abs"], f"±{tol['abs']:g}"
    if "rel" in tol:
        return abs(measured - quoted) <= tol["rel"] * abs(quoted), f"±{100 * tol['rel']:g}%"
    if "factor" in tol:
        f = tol["factor"]
        return quoted / f <= measured <= quoted * f, f"within ×{f:g}"
    raise ManifestError(f"figure {figure['id']}: unknown tolerance {tol}")


def format_like(old, value):
    """`value` written the way the quoted `old` is: its decimals, thousands commas, sign style."""
    digits = old.lstrip("+−-")
    decimals = len(digits.split(".")[1]) if "." in digits else 0
    text = f"{abs(value):,.{decimals}f}" if "," in digits else f"{abs(value):.{decimals}f}"
    minus = "−" if "−" in old else "-"
    if value < 0 and float(text.replace(",", "")) != 0:
        return minus + text
    return ("+" if old.startswith("+") else "") + text


def update_quote(figure, new_value, figures):
    """Rewrites one figure's number in its document and in the manifest entry (--update): the
    quote is replaced once inside its section. False when the quote cannot be found as written
    there (wrapped over lines, say): then edit it by hand."""
    new_quote = figure["quote"].replace(figure["value"], new_value, 1)
    path = os.path.join(ROOT, figure["file"])
    text = open(path, encoding="utf-8").read()
    section = section_text(figure["file"], figure.get("section", ""))
    start = text.find(section)
    at = text.find(figure["quote"], start)
    if new_quote == figure["quote"] or at < 0 or at > start + len(section):
        return False
    open(path, "w", encoding="utf-8").write(
        text[:at] + new_quote + text[at + len(figure["quote"]):])
    for other in figures:  # figures quoted in the same words (one table row, say) follow
        if other is not figure and other["file"] == figure["file"] and \
                other["quote"] == figure["quote"]:
            other["quote"] = new_quote
    figure["quote"], figure["value"] = new_quote, new_value
    return True


def section_text(path, heading):
    """The text from the heading whose title contains `heading` up to the next heading of the
    same or a higher level (the whole file when heading is empty)."""
    lines = open(os.path.join(ROOT, path), encoding="utf-8").read().split("\n")
    if not heading:
        return "\n".join(lines)
    start = level = None
    for i, line in enumerate(lines):
        m = re.match(r"^(#+)\s+(.*)$", line)
        if not m:
            continue
        if start is None and heading in m.group(2):
            start, level = i, len(m.group(1))
        elif start is not None and len(m.group(1)) <= level:
            return "\n".join(lines[start:i])
    if start is None:
        raise ManifestError(f"{path}: no heading containing '{heading}'")
    return "\n".join(lines[start:])


def normalise(text):
    return re.sub(r"\s+", " ", text)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--inferlab", default=os.path.join(ROOT, "build", "inferlab"))
    parser.add_argument("--bench-dir", default="")
    parser.add_argument("--manifest", default=os.path.join(ROOT, "docs", "figures.json"))
    parser.add_argument("--only", default="", help="check only figures whose id starts so")
    parser.add_argument("--list", action="store_true", help="list the figures, run nothing")
    parser.add_argument("--no-timings", action="store_true",
                        help="values only: timing figures' quotes are checked, their runs not")
    parser.add_argument("--update", action="store_true",
                        help="rewrite quoted numbers that moved (only those checked by their "
                             "quoted rounding) in the docs and the manifest; review the diff")
    args = parser.parse_args()
    args.inferlab = os.path.abspath(args.inferlab)
    if args.bench_dir:
        args.bench_dir = os.path.abspath(args.bench_dir)
    manifest = json.load(open(args.manifest))
    figures = [f for f in manifest["figures"] if f["id"].startswith(args.only)]
    if args.list:
        for f in figures:
            print(f"{f['id']}: {f['value']} ({f['run']}) in {f['file']} {f.get('section', '')}")
        return 0
    results, failures, skipped, timings, skipped_timings = {}, [], [], {}, []
    seen = set()
    for f in figures:
        if f["id"] in seen:
            raise ManifestError(f"duplicate figure id {f['id']}")
        seen.add(f["id"])
        run_id = f["run"]
        if args.no_timings and is_timing(f, manifest["runs"].get(run_id, {})):
            text = normalise(section_text(f["file"], f.get("section", "")))
            if normalise(f["quote"]) not in text:
                failures.append(f"{f['id']}: '{f['quote']}' is not in {f['file']}")
            skipped_timings.append(f["id"])
            continue
        if run_id not in results:
            if run_id not in manifest["runs"]:
                raise ManifestError(f"figure {f['id']}: unknown run '{run_id}'")
            start = time.perf_counter()
            results[run_id] = execute(run_id, manifest["runs"][run_id], args)
            timings[run_id] = time.perf_counter() - start
        doc = results[run_id]
        if doc is None:
            skipped.append(f["id"])
            continue
        if "regex" in f:
            m = re.search(f["regex"], doc, re.M)
            if not m:
                failures.append(f"{f['id']}: regex /{f['regex']}/ not found in the output of {run_id}")
                continue
            measured = parse_number(m.group(1))
        elif "ratio_of" in f:
            # One figure over another, each [run, path] (runs of their own are run once too).
            try:
                parts = []
                for other_run, other_path in f["ratio_of"]:
                    if other_run not in results:
                        start = time.perf_counter()
                        results[other_run] = execute(other_run, manifest["runs"][other_run], args)
                        timings[other_run] = time.perf_counter() - start
                    parts.append(float(lookup(results[other_run], other_path)))
            except (KeyError, IndexError, TypeError, ValueError) as e:
                failures.append(f"{f['id']}: {e}")
                continue
            measured = parts[0] / parts[1] + f.get("offset", 0.0)
        elif "pooled_mape" in f:
            # MAPE over several groups together: their MAPEs weighted by their case counts.
            try:
                groups = [lookup(doc, p) for p in f["pooled_mape"]]
            except (KeyError, IndexError, TypeError) as e:
                failures.append(f"{f['id']}: {e}")
                continue
            measured = (sum(g["mape"] * g["cases"] for g in groups) /
                        sum(g["cases"] for g in groups))
        else:
            try:
                measured = float(lookup(doc, f["path"]))
            except (KeyError, IndexError, TypeError, ValueError) as e:
                failures.append(f"{f['id']}: {e}")
                continue
        measured *= f.get("scale", 1.0)
        ok, tol_text = within(measured, f)
        if not ok and args.update and f.get("tol") is None:
            ok = update_quote(f, format_like(f["value"], measured), manifest["figures"])
        if not ok:
            failures.append(f"{f['id']}: quoted {f['value']}, now {measured:.6g} ({tol_text}); "
                            f"run '{run_id}', {f.get('path', f.get('regex', f.get('pooled_mape')))}")
        text = normalise(section_text(f["file"], f.get("section", "")))
        if normalise(f["quote"]) not in text:
            failures.append(f"{f['id']}: '{f['quote']}' is not in {f['file']}"
                            + (f" section '{f['section']}'" if f.get("section") else ""))
    if args.update:
        with open(args.manifest, "w", encoding="utf-8") as out:
            json.dump(manifest, out, indent=1, ensure_ascii=False)
            out.write("\n")
    for run_id, seconds in sorted(timings.items(), key=lambda kv: -kv[1]):
        print(f"run {run_id}: {seconds:.1f} s")
    checked = len(figures) - len(skipped) - len(skipped_timings)
    if skipped:
        print(f"skipped {len(skipped)} benchmark figures (no --bench-dir)")
    if skipped_timings:
        print(f"skipped {len(skipped_timings)} timing figures (--no-timings; their quotes checked)")
    for line in failures:
        print("FAIL " + line)
    print(f"{checked - len({l.split(':')[0] for l in failures})} of {checked} figures match"
          f" ({len(results)} runs, {sum(timings.values()):.1f} s)")
    return 1 if failures else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except ManifestError as e:
        print(f"figures: error: {e}", file=sys.stderr)
        sys.exit(2)
