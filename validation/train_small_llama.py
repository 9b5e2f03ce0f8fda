#!/usr/bin/env python3
"""Train a small Llama-architecture model on the GPU machine, for quality figures (issue 37).

Text: Python sources on that machine, read as UTF-8: every *.py file under sysconfig's stdlib
and purelib folders and /usr/lib/python3/dist-packages (outside __pycache__). Split fixed before
any training: the files sorted by path, every 20th (index % 20 == 0) held out, the rest trained
on, in path order up to --max-bytes (a first run on the stdlib alone, 9.8 MB, overfitted: train
loss 0.18, held-out perplexity 163). Tokens: the Llama 3 tokenizer (third_party/tokenizers/llama3),
<|begin_of_text|> before each file. Seed fixed (--seed); weights are rebuilt on the device, never
committed.

Roles: `target` (12 layers, hidden 768, 12 query heads and 4 KV heads of 64, MLP 2048, tied
embeddings, context 1024) and `draft` (2 layers of the same width, for speculation).

Writes OUT/model (transformers' save_pretrained, sharded safetensors, bf16, with the tokenizer
files), OUT/heldout.txt (the first --eval-chars characters of the held-out files, joined by two
newlines), OUT/calibration.txt (as many characters of the training files, GPTQ's calibration), OUT/train.txt's byte count and the run's statistics in OUT/train_stats.json.

The step count comes from the measured rate of 10 warm-up steps and --minutes, written to
OUT/plan.json before the timed loop starts; a rerun that should repeat a run exactly (same seed,
same data order, same learning-rate schedule: only the GPU's nondeterminism differs) takes that
run's count with --steps-from ITS_OUT/plan.json (waiting for the file up to --wait-s seconds), or
--steps N.

usage: python3 validation/train_small_llama.py --out DIR [--role target|draft] [--minutes M]
           [--steps N | --steps-from PLAN_JSON]
"""
import argparse
import json
import math
import os
import shutil
import sysconfig
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
TOKENIZER_DIR = os.path.join(HERE, "..", "third_party", "tokenizers", "llama3")
BOS = 128000
SKIP_DIRS = {"__pycache__"}
SHAPES = {
    "target": dict(num_hidden_layers=12),
    "draft": dict(num_hidden_layers=2),
}


def corpus_files():
    roots = sorted({sysconfig.get_paths()["stdlib"], sysconfig.get_paths()["purelib"],
                    "/usr/lib/python3/dist-packages"})
    paths = set()
    for root in roots:
        for folder, dirs, files in os.walk(root):
            dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS)
            paths.update(os.path.realpath(os.path.join(folder, f)) for f in files
                         if f.endswith(".py"))
    return roots, sorted(p for p in paths if os.path.isfile(p))


def read(path):
    with open(path, "rb") as f:
        return f.read().decode("utf-8", errors="replace")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--role", default="target", choices=sorted(SHAPES))
    ap.add_argument("--minutes", type=float, default=3.0)
    ap.add_argument("--seed", type=int, default=37)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--context", type=int, default=1024)
    ap.add_argument("--eval-chars", type=int, default=60000)
    ap.add_argument("--max-bytes", type=int, default=60_000_000)
    ap.add_argument("--steps", type=int, help="steps of the timed loop (default: from --minutes)")
    ap.add_argument("--steps-from", help="another run's plan.json: its step count")
    ap.add_argument("--wait-s", type=float, default=600, help="how long to wait for --steps-from")
    args = ap.parse_args()
    torch.manual_seed(args.seed)
    os.makedirs(args.out, exist_ok=True)
    from tokenizers import Tokenizer
    from transformers import LlamaConfig, LlamaForCausalLM

    root, paths = corpus_files()
    train_paths = [p for i, p in enumerate(paths) if i % 20 != 0]
    held_paths = [p for i, p in enumerate(paths) if i % 20 == 0]
    train_texts, size = [], 0
    for p in train_paths:
        if size >= args.max_bytes:
            break
        train_texts.append(read(p))
        size += len(train_texts[-1].encode("utf-8"))
    train_paths = train_paths[:len(train_texts)]
    held_text, size = [], 0
    for p in held_paths:  # what the evaluation reads, and a little more
        if size >= 4 * args.eval_chars:
            break
        held_text.append(read(p))
        size += len(held_text[-1])
    held_text = "\n\n".join(held_text)
    with open(os.path.join(args.out, "heldout.txt"), "w", encoding="utf-8") as f:
        f.write(held_text[:args.eval_chars])
    # GPTQ's calibration text (`inferlab quantize --calibration`): training files only, so the
    # held-out text stays blind to the quantizer too.
    with open(os.path.join(args.out, "calibration.txt"), "w", encoding="utf-8") as f:
        f.write("\n\n".join(train_texts)[:args.eval_chars])
    tok = Tokenizer.from_file(os.path.join(TOKENIZER_DIR, "tokenizer.json"))
    stream = []
    for enc in tok.encode_batch(train_texts, add_special_tokens=False):
        stream.append(BOS)
        stream += enc.ids
    data = torch.tensor(stream, dtype=torch.int64)
    stats = {
        "roots": root, "files": len(paths), "train_files": len(train_paths),
        "heldout_files": len(held_paths),
        "train_bytes": sum(len(t.encode("utf-8")) for t in train_texts),
        "heldout_files_read_bytes": len(held_text.encode("utf-8")),
        "eval_chars": min(args.eval_chars, len(held_text)), "train_tokens": len(stream),
        "role": args.role, "seed": args.seed,
    }

    config = LlamaConfig(vocab_size=128256, hidden_size=768, intermediate_size=2048,
                         num_attention_heads=12, num_key_value_heads=4, head_dim=64,
                         max_position_embeddings=args.context, rope_theta=500000.0,
                         rms_norm_eps=1e-5, tie_word_embeddings=True, bos_token_id=BOS,
                         eos_token_id=128001, **SHAPES[args.role])
    model = LlamaForCausalLM(config).cuda()
    stats["parameters"] = sum(p.numel() for p in model.parameters())
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, betas=(0.9, 0.95), weight_decay=0.1,
                            fused=True)
    gen = torch.Generator().manual_seed(args.seed)
    span = args.context + 1

    def batch():
        starts = torch.randint(0, len(data) - span, (args.batch,), generator=gen)
        x = torch.stack([data[s:s + span] for s in starts.tolist()]).cuda(non_blocking=True)
        return x[:, :-1], x[:, 1:]

    def step(lr):
        for g in opt.param_groups:
            g["lr"] = lr
        x, y = batch()
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = model(x).logits
        loss = torch.nn.functional.cross_entropy(logits.float().view(-1, logits.size(-1)),
                                                 y.reshape(-1))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss

    # The step budget from the measured rate of 10 warm-up steps at the starting rate.
    warm = 100
    for _ in range(3):
        step(1e-4)
    torch.cuda.synchronize()
    t0 = time.time()
    for _ in range(10):
        step(1e-4)
    torch.cuda.synchronize()
    per_step = (time.time() - t0) / 10
    total = max(warm + 10, int(args.minutes * 60 / per_step))
    if args.steps:
        total = args.steps
    elif args.steps_from:
        deadline = time.time() + args.wait_s
        while not os.path.exists(args.steps_from) and time.time() < deadline:
            time.sleep(2)
        with open(args.steps_from) as f:  # fails here when the file never came
            total = json.load(f)["steps"]
    stats.update(per_step_s_warmup=per_step, steps_source="--steps" if args.steps else
                 "--steps-from " + args.steps_from if args.steps_from else "--minutes")
    with open(os.path.join(args.out, "plan.json.tmp"), "w") as f:
        json.dump({"steps": total, "per_step_s": per_step, "minutes": args.minutes,
                   "seed": args.seed, "role": args.role}, f)
    os.replace(os.path.join(args.out, "plan.json.tmp"), os.path.join(args.out, "plan.json"))
    losses = []
    t0 = time.time()
    for i in range(total):
        lr = 1e-3 * min(1.0, (i + 1) / warm) * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * i / total)))
        loss = step(lr)
        if i % 50 == 0 or i == total - 1:
            losses.append([i, float(loss)])
    torch.cuda.synchronize()
    stats.update(steps=total, seconds=time.time() - t0, tokens_seen=total * args.batch * args.context,
                 losses=losses)
    model_dir = os.path.join(args.out, "model")
    model.to(torch.bfloat16).save_pretrained(model_dir, safe_serialization=True,
                                             max_shard_size="100MB")
    for f in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(os.path.join(TOKENIZER_DIR, f), model_dir)
    # Written last and whole (a rename): its presence says the model is saved.
    with open(os.path.join(args.out, "train_stats.json.tmp"), "w") as f:
        json.dump(stats, f, indent=1)
    os.replace(os.path.join(args.out, "train_stats.json.tmp"),
               os.path.join(args.out, "train_stats.json"))
    print(json.dumps({k: v for k, v in stats.items() if k != "losses"}))


if __name__ == "__main__":
    main()
