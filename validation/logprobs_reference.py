#!/usr/bin/env python3
"""The prompt logprobs of a running `inferlab server` against transformers' log-softmax of the same
checkpoint (issue 37: "logprobs match transformers within bf16 tolerance").

Snippets of held-out text: SNIPPETS pieces of TOKENS tokens each, spread evenly over the text's
token ids; each request is /v1/completions with the token ids <|begin_of_text|> + snippet as the
prompt, echo: true, max_tokens: 0, logprobs: 3 (lm-evaluation-harness's loglikelihood request).
transformers: the checkpoint in bf16, SDPA attention, one forward of the same ids, the
log-softmax of the fp32 logits in float64. Compared per position 1..n-1: |server token_logprob -
transformers'| (max, mean), the top-1 token and the top-3 set (token strings rendered as the
server renders them: the token's bytes when they are valid UTF-8, else "bytes:\\xNN...").

usage: python3 validation/logprobs_reference.py --checkpoint CKPT --text FILE --url http://127.0.0.1:PORT
       [--model NAME] [--snippets 4] [--tokens 256] [--top 3] [--device cuda] [--dump FILE]
prints JSON {max_abs_diff, mean_abs_diff, positions, top1_agreement, top3_set_agreement, ...}
"""
import argparse
import json
import math
import os
import urllib.request

BOS = 128000


def byte_decoder():
    """GPT-2's byte-level alphabet back to bytes (the inverse of bytes_to_unicode)."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + \
        list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {chr(c): b for b, c in zip(bs, cs)}


class Renderer:
    """A token id as the server writes it (src/server/logprobs_json.cpp, logprob_token_text)."""

    def __init__(self, tok):
        self.tok = tok
        self.decoder = byte_decoder()
        # Special tokens (<|begin_of_text|> ...): their text as it stands.
        self.special = {i: t.content for i, t in tok.get_added_tokens_decoder().items()}

    def __call__(self, token_id):
        piece = self.tok.id_to_token(token_id)
        if token_id in self.special or piece is None:
            data = (piece or "").encode("utf-8")
        else:
            data = bytes(self.decoder.get(c, 0) for c in piece)
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            return "bytes:" + "".join("\\x%02x" % b for b in data)


def post(url, body, timeout=120):
    request = urllib.request.Request(url, data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=timeout) as response:
        return json.loads(response.read())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--checkpoint", required=True)
    ap.add_argument("--text", required=True)
    ap.add_argument("--url", required=True, help="the server, e.g. http://127.0.0.1:8123")
    ap.add_argument("--model", help="the served model's name (default: the first of /v1/models)")
    ap.add_argument("--snippets", type=int, default=4)
    ap.add_argument("--tokens", type=int, default=256, help="tokens per snippet, after BOS")
    ap.add_argument("--top", type=int, default=3)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--dump", help="write every position's numbers here (JSON)")
    args = ap.parse_args()
    import torch
    from tokenizers import Tokenizer
    from transformers import AutoModelForCausalLM

    tok = Tokenizer.from_file(os.path.join(args.checkpoint, "tokenizer.json"))
    render = Renderer(tok)
    with open(args.text, encoding="utf-8") as f:
        ids = tok.encode(f.read(), add_special_tokens=False).ids
    span = args.tokens
    if len(ids) < span:
        raise SystemExit("the text has %d tokens, fewer than --tokens %d" % (len(ids), span))
    step = max(1, (len(ids) - span) // max(1, args.snippets - 1)) if args.snippets > 1 else 0
    prompts = [[BOS] + ids[i * step:i * step + span] for i in range(args.snippets)]

    base = args.url.rstrip("/")
    model_name = args.model
    if model_name is None:
        with urllib.request.urlopen(base + "/v1/models", timeout=30) as response:
            model_name = json.loads(response.read())["data"][0]["id"]

    try:
        model = AutoModelForCausalLM.from_pretrained(args.checkpoint, dtype=torch.bfloat16,
                                                     attn_implementation="sdpa")
    except TypeError:
        model = AutoModelForCausalLM.from_pretrained(args.checkpoint, torch_dtype=torch.bfloat16,
                                                     attn_implementation="sdpa")
    model = model.to(args.device).eval()

    diffs, top1_same, top3_same, top_value_diffs, token_text_same = [], 0, 0, [], 0
    rows, per_snippet = [], []
    for s, prompt in enumerate(prompts):
        answer = post(base + "/v1/completions",
                      {"model": model_name, "prompt": prompt, "echo": True, "max_tokens": 0,
                       "logprobs": args.top, "temperature": 0})
        lp = answer["choices"][0]["logprobs"]
        if len(lp["token_logprobs"]) != len(prompt):
            raise SystemExit("snippet %d: %d prompt tokens, %d token_logprobs back"
                             % (s, len(prompt), len(lp["token_logprobs"])))
        assert lp["token_logprobs"][0] is None, "the first token's logprob is not null"
        with torch.no_grad():
            x = torch.tensor([prompt], device=args.device)
            logp = torch.log_softmax(model(x).logits[0].float().double(), dim=-1).cpu()
        snippet_diffs = []
        for p in range(1, len(prompt)):
            ref_row = logp[p - 1]
            ref = float(ref_row[prompt[p]])
            got = lp["token_logprobs"][p]
            diff = abs(got - ref)
            diffs.append(diff)
            snippet_diffs.append(diff)
            values, indices = torch.topk(ref_row, args.top)
            ref_top = [render(int(i)) for i in indices]
            got_top = lp["top_logprobs"][p] or {}
            got_order = sorted(got_top, key=lambda t: -got_top[t])
            top1_same += bool(got_order) and got_order[0] == ref_top[0]
            top3_same += set(got_top) == set(ref_top)
            for text, value in zip(ref_top, values.tolist()):
                if text in got_top:
                    top_value_diffs.append(abs(got_top[text] - value))
            token_text_same += lp["tokens"][p] == render(prompt[p])
            rows.append({"snippet": s, "position": p, "token": prompt[p], "server": got,
                         "transformers": ref, "server_top": got_order, "transformers_top": ref_top})
        per_snippet.append({"tokens": len(prompt), "max_abs_diff": max(snippet_diffs),
                            "mean_abs_diff": sum(snippet_diffs) / len(snippet_diffs)})
    n = len(diffs)
    result = {
        "checkpoint": args.checkpoint, "model": model_name, "snippets": len(prompts),
        "tokens_per_snippet": span + 1, "positions": n, "top": args.top,
        "max_abs_diff": max(diffs), "mean_abs_diff": sum(diffs) / n,
        "rms_diff": math.sqrt(sum(d * d for d in diffs) / n),
        "p99_abs_diff": sorted(diffs)[min(n - 1, int(0.99 * n))],
        "top1_agreement": top1_same / n, "top3_set_agreement": top3_same / n,
        "top_value_max_abs_diff": max(top_value_diffs) if top_value_diffs else None,
        "token_text_agreement": token_text_same / n,
        "per_snippet": per_snippet,
        "reference": "transformers bf16 sdpa, log_softmax of fp32 logits in float64",
    }
    if args.dump:
        with open(args.dump, "w") as f:
            json.dump(rows, f)
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
