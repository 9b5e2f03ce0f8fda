#!/usr/bin/env python3
"""The CPU reference's mixture of experts against transformers' MixtralForCausalLM, fp32.

Builds a tiny random Mixtral (seeded: 2 layers, hidden 64, 8 experts of 96, top 2, vocab 256),
saves it with save_pretrained (safetensors, fp32), runs `inferlab logits --device cpu` on 48
tokens (prefill 32, then 16 decode steps) and transformers in fp32 on the same tokens (one
forward over all of them), and reports, over every position, the largest absolute difference of
the logits, the smallest cosine similarity and whether each position's argmax agrees.
Run on a machine with PyTorch and transformers (no GPU needed): 4.x saves each expert's
w1/w2/w3 under block_sparse_moe, 5.x the router as mlp.gate and the experts stacked
(mlp.experts.gate_up_proj, down_proj); the engine reads either as it is.

Usage:  python3 validation/moe_reference.py BUILD/inferlab [OUT.json]
"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch
from transformers import MixtralConfig, MixtralForCausalLM

PREFILL, DECODE = 32, 16


def main():
    binary = sys.argv[1]
    torch.manual_seed(0)
    config = MixtralConfig(vocab_size=256, hidden_size=64, intermediate_size=96,
                           num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                           num_local_experts=8, num_experts_per_tok=2, max_position_embeddings=256,
                           rms_norm_eps=1e-5, rope_theta=10000.0, sliding_window=None,
                           tie_word_embeddings=False)
    model = MixtralForCausalLM(config).float().eval()
    with torch.no_grad():  # init's 0.02 std gives near-uniform routing; widen it to exercise it
        for p in model.parameters():
            if p.dim() == 2:
                p.normal_(0.0, 1.0 / p.shape[1] ** 0.5)
    ids = np.random.default_rng(7).integers(0, config.vocab_size, PREFILL + DECODE).tolist()
    with tempfile.TemporaryDirectory() as ckpt:
        model.save_pretrained(ckpt, safe_serialization=True)
        json.dump(ids, open(os.path.join(ckpt, "ids.json"), "w"))
        npy = os.path.join(ckpt, "logits.npy")
        r = subprocess.run([binary, "logits", "--model", ckpt, "--tokens",
                            os.path.join(ckpt, "ids.json"), "--prefill", str(PREFILL), "--out",
                            npy, "--device", "cpu"], capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"inferlab logits failed ({r.returncode}):\n{r.stderr}")
        ours = np.load(npy).astype(np.float64)
    with torch.no_grad():
        ref = model(torch.tensor([ids])).logits[0].double().numpy()
    cosine = (ours * ref).sum(1) / (np.linalg.norm(ours, axis=1) * np.linalg.norm(ref, axis=1))
    result = {"tokens": len(ids), "prefill": PREFILL,
              "max_abs_diff": float(np.abs(ours - ref).max()),
              "max_abs_logit": float(np.abs(ref).max()),
              "min_cosine": float(cosine.min()),
              "argmax_agree": int((ours.argmax(1) == ref.argmax(1)).sum())}
    print(json.dumps(result))
    if len(sys.argv) > 2:
        json.dump(result, open(sys.argv[2], "w"), indent=1)


if __name__ == "__main__":
    main()
