#!/usr/bin/env python3
"""Tensor-parallel Llama steps in PyTorch + NCCL + CUDA graphs: the reference the engine's
`--tp N` is measured beside, in the same device call.

Megatron sharding, one process per GPU (torchrun): column-parallel QKV and gate/up, row-parallel
O and down each followed by an NCCL all-reduce, the LM head vocab-parallel with an all-gather.
Random bf16 weights at the shipped model's real shapes, a static KV cache, SDPA with GQA.
Layouts: "fused" (gpt-fast: one QKV matrix and one gate/up matrix per rank) and "separate"
(q, k, v, gate, up apart, as transformers runs them). Each decode step is captured in a CUDA
graph (NCCL inside) and replayed; median of repeats by CUDA events on rank 0, with p10/p90.
With --compile, also torch.compile(mode="reduce-overhead", fullgraph=True) of the same step
(gpt-fast's recipe); a failure to compile is recorded, not fatal.

Usage: torchrun --nproc_per_node N validation/tp_reference.py --model llama-3-8b
           --cases decode:1:1024,prefill:1:2048 --out FILE.json [--layout fused] [--compile]
"""
import argparse
import json
import os
import time

import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
import torch.nn.functional as F

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
BF16 = torch.bfloat16


def load_config(name):
    with open(os.path.join(ROOT, "data", "models", name + ".json")) as f:
        return json.load(f)


def normal(*shape, std):
    return torch.empty(*shape, device="cuda", dtype=BF16).normal_(0, std)


class ShardedLlama:
    def __init__(self, cfg, rank, world, layout, max_batch, max_seq):
        h = cfg["hidden_size"]
        self.nh, self.nkv = cfg["num_attention_heads"] // world, cfg["num_key_value_heads"] // world
        self.hd = cfg.get("head_dim") or h // cfg["num_attention_heads"]
        inter = cfg["intermediate_size"] // world
        vocab, layers = cfg["vocab_size"], cfg["num_hidden_layers"]
        self.vocab_shard = (vocab + world - 1) // world
        self.eps, self.layout, self.world = cfg["rms_norm_eps"], layout, world
        # torch.compile traces functional collectives without a graph break; the captured-graph
        # runs use the in-place c10d calls.
        self.functional = False
        s = h ** -0.5
        self.emb = normal(vocab, h, std=s)
        q, kv = self.nh * self.hd, self.nkv * self.hd
        self.layers = []
        for _ in range(layers):
            L = dict(n1=torch.ones(h, device="cuda", dtype=BF16),
                     n2=torch.ones(h, device="cuda", dtype=BF16),
                     wo=normal(h, q, std=q ** -0.5), wd=normal(h, inter, std=inter ** -0.5),
                     kc=torch.zeros(max_batch, self.nkv, max_seq, self.hd, device="cuda", dtype=BF16),
                     vc=torch.zeros(max_batch, self.nkv, max_seq, self.hd, device="cuda", dtype=BF16))
            if layout == "fused":
                L["wqkv"] = normal(q + 2 * kv, h, std=s)
                L["w13"] = normal(2 * inter, h, std=s)
            else:
                L.update(wq=normal(q, h, std=s), wk=normal(kv, h, std=s), wv=normal(kv, h, std=s),
                         wg=normal(inter, h, std=s), wu=normal(inter, h, std=s))
            self.layers.append(L)
        self.norm = torch.ones(h, device="cuda", dtype=BF16)
        self.lm_head = normal(self.vocab_shard, h, std=s)
        inv = 1.0 / (cfg["rope_theta"] ** (torch.arange(0, self.hd, 2, device="cuda").float() / self.hd))
        ang = torch.outer(torch.arange(max_seq, device="cuda").float(), inv)
        self.cos = torch.cat([ang.cos(), ang.cos()], -1).to(BF16)
        self.sin = torch.cat([ang.sin(), ang.sin()], -1).to(BF16)

    def all_reduce(self, x):
        if self.functional:
            return funcol.all_reduce(x, "sum", dist.group.WORLD)
        dist.all_reduce(x)
        return x

    def rope(self, x, cos, sin):
        half = x.shape[-1] // 2
        return x * cos + torch.cat([-x[..., half:], x[..., :half]], -1) * sin

    def forward(self, tokens, pos, ctx_len):
        b, s = tokens.shape
        x = F.embedding(tokens, self.emb)
        cos, sin = self.cos[pos][None, None], self.sin[pos][None, None]
        q_dim, kv_dim = self.nh * self.hd, self.nkv * self.hd
        for L in self.layers:
            hn = F.rms_norm(x, (x.shape[-1],), L["n1"], self.eps)
            if self.layout == "fused":
                q, k, v = F.linear(hn, L["wqkv"]).split([q_dim, kv_dim, kv_dim], -1)
            else:
                q, k, v = F.linear(hn, L["wq"]), F.linear(hn, L["wk"]), F.linear(hn, L["wv"])
            q = q.view(b, s, self.nh, self.hd).transpose(1, 2)
            k = k.view(b, s, self.nkv, self.hd).transpose(1, 2)
            v = v.view(b, s, self.nkv, self.hd).transpose(1, 2)
            q, k = self.rope(q, cos, sin), self.rope(k, cos, sin)
            L["kc"][:b].index_copy_(2, pos, k)
            L["vc"][:b].index_copy_(2, pos, v)
            a = F.scaled_dot_product_attention(q, L["kc"][:b, :, :ctx_len], L["vc"][:b, :, :ctx_len],
                                               is_causal=(s > 1), enable_gqa=True)
            o = self.all_reduce(F.linear(a.transpose(1, 2).reshape(b, s, -1), L["wo"]))
            x = x + o
            hn = F.rms_norm(x, (x.shape[-1],), L["n2"], self.eps)
            if self.layout == "fused":
                g, u = F.linear(hn, L["w13"]).chunk(2, -1)
            else:
                g, u = F.linear(hn, L["wg"]), F.linear(hn, L["wu"])
            d = self.all_reduce(F.linear(F.silu(g) * u, L["wd"]))
            x = x + d
        x = F.rms_norm(x[:, -1], (x.shape[-1],), self.norm, self.eps)
        local = F.linear(x, self.lm_head)  # [b, vocab shard]
        if self.functional:
            out = funcol.all_gather_tensor(local.contiguous(), 0, dist.group.WORLD)
        else:
            out = torch.empty(self.world * b, local.shape[-1], device="cuda", dtype=local.dtype)
            dist.all_gather_into_tensor(out, local.contiguous())
        return torch.argmax(out.view(self.world, b, -1).permute(1, 0, 2).reshape(b, -1), -1)


def time_replays(fn, repeats=20, inner=10, sample_s=None):
    """Median and p10/p90 of fn() in ms, each sample the mean of `inner` back-to-back runs.
    With sample_s, `inner` is chosen so that one sample lasts about that long (1 to 10 runs):
    a 70B prefill step would otherwise take minutes of repeats."""
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    if sample_s is not None:
        t0 = time.time()
        fn()
        torch.cuda.synchronize()
        inner = max(1, min(10, int(sample_s / max(time.time() - t0, 1e-6))))
    samples = []
    for _ in range(repeats):
        dist.barrier()
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(inner):
            fn()
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end) / inner)
    samples.sort()
    q = lambda f: samples[min(len(samples) - 1, int(f * len(samples)))]
    return {"median_ms": q(0.5), "p10_ms": q(0.1), "p90_ms": q(0.9), "min_ms": samples[0],
            "max_ms": samples[-1], "samples": len(samples), "inner": inner}


def capture(fn):
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        fn()
    torch.cuda.current_stream().wait_stream(side)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn()
    return g


def write_steps(result, a):
    """The rows in `inferlab validate --data` form: whole steps in seconds, with tp and layout."""
    steps = []
    for row in result["rows"]:
        g = row["graph"]
        step = {"model": a.model, "phase": row["phase"], "batch": row["batch"], "tp": result["tp"],
                "layout": "fused_qkv_gate_up" if a.layout == "fused" else "separate",
                "graph": {"median_s": g["median_ms"] / 1e3, "min_s": g["min_ms"] / 1e3,
                          "max_s": g["max_ms"] / 1e3, "samples": g["samples"]}}
        step["tokens" if row["phase"] == "prefill" else "context"] = row.get("tokens",
                                                                           row.get("context"))
        if a.split:
            step["split"] = a.split
        steps.append(step)
    doc = {"device": result["device"], "measured_at": result["measured_at"],
           "script": "validation/tp_reference.py", "torch": result["torch"],
           "nccl": result["nccl"],
           "method": "Megatron TP under torchrun, NCCL in-place collectives, each step one CUDA "
                     "graph replayed; median of 15 samples of ~30 ms (CUDA events on rank 0)",
           "steps": steps}
    with open(a.steps_out, "w") as f:
        json.dump(doc, f, indent=1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--cases", default="decode:1:1024")
    ap.add_argument("--layout", default="fused", choices=["fused", "separate"])
    ap.add_argument("--compile", action="store_true")
    ap.add_argument("--compile-max-batch", type=int, default=1 << 20,
                    help="torch.compile only decode cases of at most this batch")
    ap.add_argument("--quick-samples", action="store_true",
                    help="15 samples of ~30 ms each (the step grid), not 20 of 10 replays")
    ap.add_argument("--split", default="",
                    help="with --steps-out: the split every row of this run belongs to")
    ap.add_argument("--steps-out", default="",
                    help="also write the rows as `inferlab validate` steps (median_s, tp, layout)")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", device_id=torch.device("cuda", rank))
    cfg = load_config(a.model)
    cases = [(p, int(b), int(n)) for p, b, n in (c.split(":") for c in a.cases.split(","))]
    max_batch = max(b for _, b, _ in cases)
    max_seq = max(n for _, _, n in cases) + 16
    torch.manual_seed(1234 + rank)
    t0 = time.time()
    model = ShardedLlama(cfg, rank, world, a.layout, max_batch, max_seq)
    result = {"model": a.model, "tp": world, "layout": a.layout,
              "device": torch.cuda.get_device_name(0), "torch": torch.__version__,
              "nccl": ".".join(map(str, torch.cuda.nccl.version())),
              "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
              "init_s": time.time() - t0, "rows": []}
    with torch.no_grad():
        for phase, b, n in cases:
            if phase == "prefill":
                tokens = torch.randint(0, cfg["vocab_size"], (b, n), device="cuda")
                pos = torch.arange(n, device="cuda")
                ctx = n
            else:
                tokens = torch.randint(0, cfg["vocab_size"], (b, 1), device="cuda")
                pos = torch.tensor([n - 1], device="cuda")
                ctx = n
            step = lambda: model.forward(tokens, pos, ctx)
            row = {"phase": phase, "batch": b, "tokens" if phase == "prefill" else "context": n}
            g = capture(step)
            row["graph"] = (time_replays(g.replay, repeats=15, sample_s=0.03) if a.quick_samples
                            else time_replays(g.replay))
            del g
            if a.compile and phase == "decode" and b <= a.compile_max_batch:
                try:
                    model.functional = True
                    compiled = torch.compile(model.forward, mode="reduce-overhead", fullgraph=True)
                    c0 = time.time()
                    for _ in range(3):
                        compiled(tokens, pos, ctx)
                    torch.cuda.synchronize()
                    row["compile_s"] = time.time() - c0
                    row["compile"] = time_replays(lambda: compiled(tokens, pos, ctx))
                except Exception as e:  # recorded: torch.compile of collectives may not trace
                    row["compile_error"] = repr(e)[:500]
                model.functional = False
            result["rows"].append(row)
            if rank == 0:
                print(json.dumps(row), flush=True)
    if rank == 0:
        with open(a.out, "w") as f:
            json.dump(result, f, indent=1)
        if a.steps_out:
            write_steps(result, a)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
