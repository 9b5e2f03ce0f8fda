#!/usr/bin/env python3
"""Reference token ids from Hugging Face `tokenizers` for inferlab's tokenizer test (issue 18).

Runs on the GPU machine (it has `tokenizers`, no network). Encodes every line of the corpus
(validation/data/tokenizer_corpus.jsonl, one {"text": ...} per line) with the given
tokenizer.json, without special tokens added (add_special_tokens=False), and writes
  {"tokenizer_sha256": ..., "corpus_sha256": ..., "tokenizers_version": ..., "count": N,
   "ids": [[...], ...]}
in corpus order. inferlab's test (tests/engine/tokenizer_test.cpp) requires its own ids to be
identical for every line.

Usage:
  python3 validation/tokenizer_reference.py TOKENIZER_JSON [--corpus PATH] --out PATH
e.g.
  python3 validation/tokenizer_reference.py third_party/tokenizers/llama3/tokenizer.json \
      --out $OUT/tokenizer_ids_llama3.json
"""
import argparse
import hashlib
import json
import os
import sys


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser(description="HF tokenizers reference ids for the corpus")
    parser.add_argument("tokenizer", help="path to tokenizer.json")
    parser.add_argument("--corpus", default=os.path.join(here, "data", "tokenizer_corpus.jsonl"))
    parser.add_argument("--out", required=True, help="where to write the ids (JSON)")
    args = parser.parse_args()

    import tokenizers  # imported here so --help works without it
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(args.tokenizer)
    texts = []
    with open(args.corpus, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                texts.append(json.loads(line)["text"])
            except (ValueError, KeyError) as e:
                sys.exit(f"{args.corpus}:{number}: not a {{\"text\": ...}} line ({e})")
    ids = [enc.ids for enc in tok.encode_batch(texts, add_special_tokens=False)]
    # The round trip HF itself gives (informational: inferlab's must be exact).
    lossy = sum(1 for t, i in zip(texts, ids) if tok.decode(i, skip_special_tokens=False) != t)
    result = {
        "tokenizer_sha256": sha256(args.tokenizer),
        "corpus_sha256": sha256(args.corpus),
        "tokenizers_version": tokenizers.__version__,
        "add_special_tokens": False,
        "count": len(ids),
        "hf_decode_mismatches": lossy,
        "ids": ids,
    }
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(result, f, separators=(",", ":"))
        f.write("\n")
    total = sum(len(i) for i in ids)
    print(f"{len(ids)} strings, {total} tokens, tokenizers {tokenizers.__version__}, "
          f"HF decode differs on {lossy}: wrote {args.out}")


if __name__ == "__main__":
    main()
