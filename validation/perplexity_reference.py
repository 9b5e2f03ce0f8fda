#!/usr/bin/env python3
"""transformers' perplexity of a checkpoint on a text, windowed exactly as `inferlab perplexity`
does it (engine/perplexity.hpp): windows of CONTEXT tokens every STRIDE tokens, each scoring the
tokens no earlier window scored; ids = <|begin_of_text|> + the text's tokens; bf16 weights, SDPA
attention, the log-softmax of the fp32 logits in float64.

usage: python3 validation/perplexity_reference.py CHECKPOINT TEXT [--context 1024 --stride 512]
prints JSON {perplexity, nll_mean, tokens, windows, context, stride}
"""
import argparse
import json
import math
import os

import torch


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("checkpoint")
    ap.add_argument("text")
    ap.add_argument("--context", type=int, default=1024)
    ap.add_argument("--stride", type=int, default=512)
    args = ap.parse_args()
    from tokenizers import Tokenizer
    from transformers import AutoModelForCausalLM
    tok = Tokenizer.from_file(os.path.join(args.checkpoint, "tokenizer.json"))
    with open(args.text, encoding="utf-8") as f:
        text = f.read()
    ids = [128000] + tok.encode(text, add_special_tokens=False).ids
    try:
        model = AutoModelForCausalLM.from_pretrained(args.checkpoint, dtype=torch.bfloat16,
                                                     attn_implementation="sdpa")
    except TypeError:
        model = AutoModelForCausalLM.from_pretrained(args.checkpoint, torch_dtype=torch.bfloat16,
                                                     attn_implementation="sdpa")
    model = model.cuda().eval()
    nll, tokens, windows, scored_until, begin = 0.0, 0, 0, 1, 0
    with torch.no_grad():
        while True:
            end = min(begin + args.context, len(ids))
            x = torch.tensor([ids[begin:end]], device="cuda")
            logp = torch.log_softmax(model(x).logits[0].float().double(), dim=-1)
            first = max(scored_until, begin + 1)
            rows = torch.arange(first - begin - 1, end - begin - 1, device="cuda")
            targets = torch.tensor(ids[first:end], device="cuda")
            nll -= float(logp[rows, targets].sum())
            tokens += end - first
            windows += 1
            scored_until = end
            if end == len(ids):
                break
            begin += args.stride
    print(json.dumps({"perplexity": math.exp(nll / tokens), "nll_mean": nll / tokens,
                      "tokens": tokens, "windows": windows, "context": args.context,
                      "stride": args.stride}))


if __name__ == "__main__":
    main()
