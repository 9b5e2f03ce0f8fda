#!/usr/bin/env python3
"""A real, minimal continuous-batching server in plain PyTorch, to check `inferlab serve`.

It serves a Poisson request stream with vLLM's default (v0) policy: when prompts are waiting
and a slot is free, an iteration prefills them (flattened into one token dimension, attention
per sequence); otherwise one decode token for every running sequence. Eager PyTorch (no CUDA
graphs), the plain Llama of torch_reference.py (random bf16 weights at the real shapes), greedy
sampling, one KV slot per running sequence (static cache, running sequences kept in slots
0..B-1, so decode attends a view of the cache with a per-slot length mask).

Differences from vLLM that the comparison has to live with: decode attention is one SDPA call
over the longest context in the batch rounded up to 256 tokens, with a length mask (vLLM's paged
kernel reads each sequence's own context); cuDNN runs it, and since cuDNN builds an execution
plan for every new shape (40-80 ms each) every (batch, context bucket) pair is run once before
the clock starts; prefill attention is one SDPA call per prompt (FlashAttention, not cuDNN, for
the same reason); the scheduler is Python.

Writes, per rate: the requests (arrival, prompt, output), what happened to each (first token,
finish, wall clock) and every iteration (start, duration, prefill tokens, decode batch).
Usage on the device:  python3 validation/serving_reference.py $OUT/serving_reference.json
[--model llama-3-8b] [--rates 2,5] [--requests 120] [--smoke]
"""
import argparse
import json
import os
import random
import sys
import time

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_reference import DEV, PlainLlama, load_config  # noqa: E402

MAX_SLOTS = 64
MAX_LEN = 2048
TOKEN_BUDGET = 8192
CONTEXT_BUCKET = 256
PREFILL_BACKENDS = [SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH]


def make_requests(n, rate, seed):
    """Poisson arrivals; prompts uniform 128..1024 tokens, outputs uniform 32..256."""
    rng = random.Random(seed)
    t, out = 0.0, []
    for _ in range(n):
        t += rng.expovariate(rate)
        out.append(dict(arrival_s=t, prompt_tokens=rng.randint(128, 1024),
                        output_tokens=rng.randint(32, 256)))
    return out


class Server:
    def __init__(self, model, vocab):
        self.m, self.vocab = model, vocab

    def _layer_tail(self, L, x, a):
        m = self.m
        x = x + F.linear(a, L["wo"])
        hn = F.rms_norm(x, (x.shape[-1],), L["n2"], m.eps)
        return x + F.linear(F.silu(F.linear(hn, L["wg"])) * F.linear(hn, L["wu"]), L["wd"])

    def prefill(self, prompts, slots):
        """prompts: token tensors; slots: their cache slots. Returns the first tokens."""
        m = self.m
        lens = [p.numel() for p in prompts]
        tokens = torch.cat(prompts)[None]  # [1, T]
        pos = torch.cat([torch.arange(n, device=DEV) for n in lens])
        x = F.embedding(tokens, m.emb)
        cos, sin = m.cos[pos][None, None], m.sin[pos][None, None]
        t = tokens.shape[1]
        for L in m.layers:
            hn = F.rms_norm(x, (x.shape[-1],), L["n1"], m.eps)
            q = F.linear(hn, L["wq"]).view(1, t, m.nh, m.hd).transpose(1, 2)
            k = F.linear(hn, L["wk"]).view(1, t, m.nkv, m.hd).transpose(1, 2)
            v = F.linear(hn, L["wv"]).view(1, t, m.nkv, m.hd).transpose(1, 2)
            q = q * cos + m.rot(q) * sin
            k = k * cos + m.rot(k) * sin
            outs, start = [], 0
            for n, slot in zip(lens, slots):
                ks, vs = k[:, :, start:start + n], v[:, :, start:start + n]
                L["kc"][slot, :, :n] = ks[0]
                L["vc"][slot, :, :n] = vs[0]
                with sdpa_kernel(PREFILL_BACKENDS):
                    outs.append(F.scaled_dot_product_attention(
                        q[:, :, start:start + n], ks, vs, is_causal=True, enable_gqa=True))
                start += n
            a = torch.cat(outs, 2).transpose(1, 2).reshape(1, t, -1)
            x = self._layer_tail(L, x, a)
        last = torch.tensor([sum(lens[:i + 1]) - 1 for i in range(len(lens))], device=DEV)
        xl = F.rms_norm(x[0, last], (x.shape[-1],), m.norm, m.eps)
        return torch.argmax(F.linear(xl, m.lm_head), -1).tolist()

    def decode(self, tokens, lengths):
        """Running sequences in slots 0..B-1: their last tokens and KV lengths before it."""
        m = self.m
        b = len(tokens)
        tok = torch.tensor(tokens, device=DEV)[:, None]
        pos = torch.tensor(lengths, device=DEV)
        ctx = min(MAX_LEN, -(-(max(lengths) + 1) // CONTEXT_BUCKET) * CONTEXT_BUCKET)
        mask = (torch.arange(ctx, device=DEV)[None, :] <= pos[:, None])[:, None, None, :]  # [b,1,1,ctx]
        x = F.embedding(tok, m.emb)
        cos, sin = m.cos[pos][:, None, None], m.sin[pos][:, None, None]
        rows = torch.arange(b, device=DEV)
        for L in m.layers:
            hn = F.rms_norm(x, (x.shape[-1],), L["n1"], m.eps)
            q = F.linear(hn, L["wq"]).view(b, 1, m.nh, m.hd).transpose(1, 2)
            k = F.linear(hn, L["wk"]).view(b, 1, m.nkv, m.hd).transpose(1, 2)
            v = F.linear(hn, L["wv"]).view(b, 1, m.nkv, m.hd).transpose(1, 2)
            q = q * cos + m.rot(q) * sin
            k = k * cos + m.rot(k) * sin
            L["kc"][rows, :, pos] = k[:, :, 0]
            L["vc"][rows, :, pos] = v[:, :, 0]
            a = F.scaled_dot_product_attention(q, L["kc"][:b, :, :ctx], L["vc"][:b, :, :ctx],
                                               attn_mask=mask, enable_gqa=True)
            x = self._layer_tail(L, x, a.transpose(1, 2).reshape(b, 1, -1))
        xl = F.rms_norm(x[:, -1], (x.shape[-1],), m.norm, m.eps)
        return torch.argmax(F.linear(xl, m.lm_head), -1).tolist()

    def warm_decode_shapes(self, longest):
        """Runs every (batch, context bucket) decode shape once, so that no timed iteration
        pays for building an attention plan."""
        for ctx in range(CONTEXT_BUCKET, min(MAX_LEN, longest + CONTEXT_BUCKET) + 1,
                         CONTEXT_BUCKET):
            for b in range(1, MAX_SLOTS + 1):
                self.decode([1] * b, [ctx - 1] * b)
        torch.cuda.synchronize()

    def move_slot(self, src, dst, n):
        for L in self.m.layers:
            L["kc"][dst, :, :n] = L["kc"][src, :, :n]
            L["vc"][dst, :, :n] = L["vc"][src, :, :n]

    def serve(self, requests):
        """Runs the stream in real time; returns per-request outcomes and iterations."""
        waiting, running, outcomes, iterations = [], [], [None] * len(requests), []
        nxt, done = 0, 0
        t0 = time.perf_counter()
        while done < len(requests):
            now = time.perf_counter() - t0
            while nxt < len(requests) and requests[nxt]["arrival_s"] <= now:
                waiting.append(nxt)
                nxt += 1
            if not waiting and not running:
                time.sleep(max(0.0, requests[nxt]["arrival_s"] - now))
                continue
            start = time.perf_counter() - t0
            admit, budget = [], TOKEN_BUDGET
            while waiting and len(running) + len(admit) < MAX_SLOTS:
                n = requests[waiting[0]]["prompt_tokens"]
                if admit and n > budget:
                    break
                admit.append(waiting.pop(0))
                budget -= n
            if admit:
                slots = list(range(len(running), len(running) + len(admit)))
                prompts = [torch.randint(0, self.vocab, (requests[i]["prompt_tokens"],),
                                         device=DEV) for i in admit]
                first = self.prefill(prompts, slots)
                end = time.perf_counter() - t0
                for i, tok in zip(admit, first):
                    outcomes[i] = dict(first_token_s=end, token_times_s=[end])
                    running.append(dict(id=i, last=tok, length=requests[i]["prompt_tokens"],
                                        made=1))
                iterations.append(dict(start_s=start, duration_s=end - start,
                                       prefill_tokens=TOKEN_BUDGET - budget, decode_seqs=0))
            else:
                toks = self.decode([r["last"] for r in running], [r["length"] for r in running])
                end = time.perf_counter() - t0
                iterations.append(dict(start_s=start, duration_s=end - start, prefill_tokens=0,
                                       decode_seqs=len(running),
                                       max_context=max(r["length"] for r in running) + 1))
                for r, tok in zip(running, toks):
                    r["last"], r["length"], r["made"] = tok, r["length"] + 1, r["made"] + 1
                    outcomes[r["id"]]["token_times_s"].append(end)
            # Finished sequences leave; the last running one moves into the freed slot.
            for idx in range(len(running) - 1, -1, -1):
                r = running[idx]
                if r["made"] >= requests[r["id"]]["output_tokens"]:
                    outcomes[r["id"]]["finish_s"] = outcomes[r["id"]]["token_times_s"][-1]
                    done += 1
                    last = len(running) - 1
                    if idx != last:
                        self.move_slot(last, idx, running[last]["length"])
                        running[idx] = running[last]
                    running.pop()
        for o in outcomes:
            o["token_times_s"] = [round(t, 6) for t in o["token_times_s"]]
        return outcomes, iterations


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--model", default="llama-3-8b")
    ap.add_argument("--rates", default="2,5")
    ap.add_argument("--requests", type=int, default=120)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--smoke", action="store_true", help="a few requests, to check it runs")
    args = ap.parse_args()
    cfg = load_config(args.model)
    torch.manual_seed(0)
    with torch.no_grad():
        model = PlainLlama(cfg, max_batch=MAX_SLOTS, max_seq=MAX_LEN)
        server = Server(model, cfg["vocab_size"])
        t = time.perf_counter()
        server.warm_decode_shapes(1024 + 256)  # the longest prompt plus the longest output
        print(f"decode shapes warmed in {time.perf_counter() - t:.1f} s", flush=True)
        # Warm-up: cuBLAS heuristics, allocator, SDPA kernels for both phases.
        server.serve(make_requests(6 if args.smoke else 24, 50.0, 12345))
        runs = []
        for rate in [float(r) for r in args.rates.split(",")]:
            reqs = make_requests(6 if args.smoke else args.requests, rate, args.seed)
            torch.cuda.synchronize()
            outcomes, iterations = server.serve(reqs)
            runs.append(dict(rate_per_s=rate, requests=reqs, outcomes=outcomes,
                             iterations=iterations))
            print(f"rate {rate}: {len(iterations)} iterations, last finish "
                  f"{max(o['finish_s'] for o in outcomes):.2f} s", flush=True)
    result = dict(model=args.model, policy="vllm (prefill first), eager, greedy",
                  max_slots=MAX_SLOTS, token_budget=TOKEN_BUDGET,
                  device=torch.cuda.get_device_name(), torch=torch.__version__,
                  cuda=torch.version.cuda,
                  measured_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), runs=runs)
    with open(args.out, "w") as f:
        json.dump(result, f)


if __name__ == "__main__":
    main()
