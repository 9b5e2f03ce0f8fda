#!/usr/bin/env python3
"""The texts the issue 37 evaluation reads, cut from the trained model's held-out text
(validation/train_small_llama.py's heldout.txt), in whole lines, token counts from the engine's
own tokenizer (`inferlab tokenize`, one line at a time: a line's count in context can differ by a
token or so at its edges):

  OUT/heldout.txt        the held-out text as it is (GPU perplexity, transformers' perplexity)
  OUT/heldout_cpu.txt    its first lines up to --cpu-tokens tokens (the CPU reference's slice: one
                         window of 1024 at the default 950, so the CPU runs one prefill per format)
  OUT/prompt_I.txt       --prompts prompts of at least --prompt-tokens tokens, whole lines, their
                         first lines spread evenly over the text after the CPU slice (speculation,
                         tensor-parallel greedy tokens)
  OUT/texts.json         what was cut: lines, characters and estimated tokens of each

usage: python3 validation/quality_texts.py --inferlab BIN --model CKPT --heldout FILE --out DIR
           [--cpu-tokens 950] [--prompts 8] [--prompt-tokens 200]
"""
import argparse
import json
import os
import subprocess
import tempfile


def line_tokens(inferlab, model, lines):
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False, encoding="utf-8") as f:
        for line in lines:
            f.write(json.dumps({"text": line}) + "\n")
        path = f.name
    try:
        result = subprocess.run([inferlab, "tokenize", "--model", model, "--input", path,
                                 "--format", "json"], capture_output=True, text=True, check=True)
    finally:
        os.unlink(path)
    return [len(ids) for ids in json.loads(result.stdout)["tokens"]]


def write(path, text):
    with open(path, "w", encoding="utf-8", newline="") as f:
        f.write(text)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--inferlab", required=True)
    ap.add_argument("--model", required=True, help="checkpoint folder (its tokenizer)")
    ap.add_argument("--heldout", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--cpu-tokens", type=int, default=950)
    ap.add_argument("--prompts", type=int, default=8)
    ap.add_argument("--prompt-tokens", type=int, default=200)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    with open(args.heldout, encoding="utf-8") as f:
        text = f.read()
    lines = text.splitlines(keepends=True)
    counts = line_tokens(args.inferlab, args.model, lines)
    write(os.path.join(args.out, "heldout.txt"), text)

    cpu_lines, total = 0, 0
    while cpu_lines < len(lines) and total + counts[cpu_lines] <= args.cpu_tokens:
        total += counts[cpu_lines]
        cpu_lines += 1
    write(os.path.join(args.out, "heldout_cpu.txt"), "".join(lines[:cpu_lines]))
    info = {"heldout": {"lines": len(lines), "chars": len(text), "tokens_estimated": sum(counts)},
            "heldout_cpu": {"lines": cpu_lines, "chars": len("".join(lines[:cpu_lines])),
                            "tokens_estimated": total},
            "prompts": []}

    # Prompt starts: lines that begin with text (not blank), spread evenly after the CPU slice.
    rest = list(range(cpu_lines, len(lines)))
    starts = [i for i in rest if lines[i].strip()]
    usable = []
    for i in starts:  # a start leaves room for a whole prompt before the end
        if sum(counts[i:]) >= args.prompt_tokens:
            usable.append(i)
    if len(usable) < args.prompts:
        raise SystemExit("the held-out text after the CPU slice has room for %d prompts, not %d"
                         % (len(usable), args.prompts))
    step = len(usable) / args.prompts
    for p in range(args.prompts):
        first = usable[int(p * step)]
        end, tokens = first, 0
        while tokens < args.prompt_tokens:
            tokens += counts[end]
            end += 1
        prompt = "".join(lines[first:end])
        write(os.path.join(args.out, "prompt_%d.txt" % p), prompt)
        info["prompts"].append({"file": "prompt_%d.txt" % p, "first_line": first,
                                "lines": end - first, "chars": len(prompt),
                                "tokens_estimated": tokens})
    with open(os.path.join(args.out, "texts.json"), "w") as f:
        json.dump(info, f, indent=1)
    print(json.dumps({"heldout_tokens_estimated": info["heldout"]["tokens_estimated"],
                      "cpu_tokens_estimated": total,
                      "prompt_tokens_estimated": [p["tokens_estimated"] for p in info["prompts"]]}))


if __name__ == "__main__":
    main()
