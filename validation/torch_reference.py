#!/usr/bin/env python3
"""Ground truth from PyTorch on the GPU machine.

Measures, in one run:
  * headline ceilings: bf16 `a @ b` (8192^3) and `y.copy_(x)` (1 GiB),
  * kernel latency: GPU time per tiny kernel (graph replay) and host time per eager op,
  * operators as PyTorch runs them (F.linear, SDPA prefill/decode with GQA, F.rms_norm,
    add, silu*mul, softmax, embedding) over a grid of shapes, each timed with CUDA events
    around the single call, median of repeats, L2 flushed before every timed call,
  * whole steps of a plain PyTorch Llama (static KV cache, random bf16 weights at the real
    shapes), prefill and decode, by CUDA-graph replay and eagerly,
  * Hugging Face LlamaForCausalLM eager, prefill and one decode step.

Writes one JSON file (argv[1], default $OUT/torch_reference.json). Inputs are random, never
zeros. Usage on the device:  python3 validation/torch_reference.py $OUT/torch_reference.json
[--only headline,launch,ops,steps,hf_eager,rope_ops] [--plan full|host] [--host-op-each-step]

rope_ops: PlainLlama's RoPE (q*cos + rot(q)*sin and the same for k, on the transposed views
F.linear's output gives) as operators, timed like the others; rows "op": "rope".
"""
import gc
import json
import math
import os
import statistics
import sys
import time

import torch
import torch.nn.functional as F

from splits import split_of  # noqa: F401 (the held-out rule; other scripts import it from here)

DEV = "cuda"
BF16 = torch.bfloat16
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
L2_FLUSH = torch.empty(512 * 1024 * 1024 // 4, dtype=torch.float32, device=DEV)


def stats(samples_s):
    s = sorted(samples_s)
    return {
        "median_s": statistics.median(s),
        "min_s": s[0],
        "max_s": s[-1],
        "stdev_s": statistics.pstdev(s),
        "samples": len(s),
    }


def time_op(fn, repeats=25, warmup=3, flush=True):
    """Median GPU time of fn() with CUDA events around the call alone."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(repeats)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(repeats)]
    for i in range(repeats):
        if flush:
            L2_FLUSH.add_(1.0)  # evicts the operands from L2 (50 MB on H100)
        starts[i].record()
        fn()
        ends[i].record()
    torch.cuda.synchronize()
    return stats([s.elapsed_time(e) * 1e-3 for s, e in zip(starts, ends)])


def rand(*shape, dtype=BF16):
    return torch.randn(*shape, device=DEV, dtype=torch.float32).to(dtype)


def headline():
    out = {}
    n = 8192
    a, b = rand(n, n), rand(n, n)
    st = time_op(lambda: a @ b, repeats=20, flush=False)
    out["bf16_matmul_8192"] = dict(st, flops_per_s=2 * n**3 / st["median_s"])
    x = rand(512 * 1024 * 1024)  # 1 GiB of bf16
    y = torch.empty_like(x)
    st = time_op(lambda: y.copy_(x), repeats=20, flush=False)
    out["copy_1gib"] = dict(st, bytes_per_s=2 * x.numel() * 2 / st["median_s"])
    assert torch.equal(y, x)
    return out


def launch_costs():
    x = rand(1)
    # GPU time per tiny kernel: 200 adds captured in a graph, replayed.
    g = torch.cuda.CUDAGraph()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            x.add_(1e-3)
    torch.cuda.current_stream().wait_stream(s)
    with torch.cuda.graph(g):
        for _ in range(200):
            x.add_(1e-3)
    st = time_op(g.replay, repeats=20, flush=False)
    per_kernel_graph_s = st["median_s"] / 200
    # Host-bound eager: 2000 tiny adds issued from Python.
    def eager():
        for _ in range(2000):
            x.add_(1e-3)
    st_e = time_op(eager, repeats=7, flush=False)
    # Host time of one eager layer of the plain Llama: the same Python and the same ops on a
    # tiny configuration (GPU work negligible), with 8 and 24 layers; the difference over 16
    # layers is the per-layer cost, the rest is the per-step base (embedding, final norm, head).
    def tiny_step_s(layers):
        # Llama 3.2 1B's heads (so SDPA picks the same backend), tiny hidden and MLP widths.
        cfg = dict(hidden_size=256, num_attention_heads=32, num_key_value_heads=8, head_dim=64,
                   intermediate_size=256, vocab_size=256, num_hidden_layers=layers,
                   rms_norm_eps=1e-5, rope_theta=10000.0, tie_word_embeddings=True)
        m = PlainLlama(cfg, max_batch=1, max_seq=64)
        toks, pos = torch.randint(0, 256, (1, 1), device=DEV), torch.tensor([31], device=DEV)
        gc.collect()
        gc.disable()
        with torch.no_grad():
            st = time_op(lambda: m(toks, pos, 32), repeats=40, warmup=5, flush=False)
        gc.enable()
        return st["median_s"]
    t8, t24 = tiny_step_s(8), tiny_step_s(24)
    per_layer = (t24 - t8) / 16
    return {
        "graph_per_kernel_s": per_kernel_graph_s,
        "eager_per_op_s": st_e["median_s"] / 2000,
        "eager_plain_llama_layer_s": per_layer,
        "eager_plain_llama_step_base_s": t8 - 8 * per_layer,
    }


# --------------------------------------------------------------------------- operators
LINEAR_SHAPES = {  # (name, N, K) per model: the projections and the LM head
    "llama-3.2-1b": [("q", 2048, 2048), ("kv", 512, 2048), ("gate", 8192, 2048),
                     ("down", 2048, 8192), ("lm_head", 128256, 2048)],
    "llama-3-8b": [("q", 4096, 4096), ("kv", 1024, 4096), ("gate", 14336, 4096),
                   ("down", 4096, 14336), ("lm_head", 128256, 4096)],
    # Held out: never used to fit (see split_of).
    "llama-3.2-3b": [("q", 3072, 3072), ("kv", 1024, 3072), ("gate", 8192, 3072),
                     ("down", 3072, 8192), ("lm_head", 128256, 3072)],
    "odd": [("odd", 5000, 3000), ("odd", 1536, 7000), ("odd", 11008, 4096)],
}
TOKENS = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192]
ODD_TOKENS = [3, 24, 100, 333, 777, 1500, 3000, 6000]


def op_grid():
    rows = []
    for model, shapes in LINEAR_SHAPES.items():
        for name, n, k in shapes:
            w = rand(n, k)
            for m in (ODD_TOKENS if model == "odd" else TOKENS):
                if name == "lm_head" and m > 512:
                    continue
                x = rand(m, k)
                st = time_op(lambda: F.linear(x, w))
                rows.append(dict(op="linear", model=model, proj=name, m=m, n=n, k=k, **st))
    for heads, d in ((32, 64), (32, 128), (24, 128)):
        for b in (1, 2, 4):
            for s in (128, 512, 1024, 2048, 4096):
                q, k_, v = rand(b, heads, s, d), rand(b, 8, s, d), rand(b, 8, s, d)
                st = time_op(lambda: F.scaled_dot_product_attention(
                    q, k_, v, is_causal=True, enable_gqa=True))
                rows.append(dict(op="attention_prefill", batch=b, heads=heads, kv_heads=8,
                                 head_dim=d, seq=s, **st))
        for b in (1, 8, 16, 32, 64):
            for ctx in (256, 1024, 2048, 4096, 8192):
                q, k_, v = rand(b, heads, 1, d), rand(b, 8, ctx, d), rand(b, 8, ctx, d)
                st = time_op(lambda: F.scaled_dot_product_attention(
                    q, k_, v, enable_gqa=True))
                rows.append(dict(op="attention_decode", batch=b, heads=heads, kv_heads=8,
                                 head_dim=d, context=ctx, **st))
    for t in (1, 16, 128, 512, 2048, 4096, 8192, 32768):
        for h in (2048, 3072, 4096):
            x, w, r = rand(t, h), rand(h), rand(t, h)
            st = time_op(lambda: F.rms_norm(x, (h,), w, 1e-5))
            rows.append(dict(op="rmsnorm", tokens=t, hidden=h, **st))
            st = time_op(lambda: x + r)
            rows.append(dict(op="add", tokens=t, hidden=h, **st))
            ids = torch.randint(0, 128256, (t,), device=DEV)
            table = rand(128256, h)
            st = time_op(lambda: F.embedding(ids, table))
            rows.append(dict(op="embedding", tokens=t, hidden=h, **st))
        for inter in (8192, 14336):
            g, u = rand(t, inter), rand(t, inter)
            st = time_op(lambda: F.silu(g) * u)
            rows.append(dict(op="silu_mul_eager", tokens=t, intermediate=inter, **st))
    for rows_n, cols in ((32 * 512, 512), (32 * 2048, 2048), (4096, 128256), (1, 128256)):
        x = rand(rows_n, cols)
        st = time_op(lambda: torch.softmax(x, dim=-1))
        rows.append(dict(op="softmax", rows=rows_n, cols=cols, **st))
    for r in rows:
        r["split"] = split_of(r)
    return rows


ROPE_HEADS = ((32, 8, 64), (24, 8, 128), (32, 8, 128))  # Llama 3.2 1B, 3B, Llama 3 8B


def rope_grid():
    """PlainLlama's rotary embedding on the q and k views of one layer, as an operator."""
    rows = []
    for heads, kv_heads, d in ROPE_HEADS:
        for b, s in [(1, t) for t in (1, 16, 128, 512, 2048, 4096, 8192)] + [(4, 1024)]:
            ql, kl = rand(b, s, heads * d), rand(b, s, kv_heads * d)
            q = ql.view(b, s, heads, d).transpose(1, 2)
            k = kl.view(b, s, kv_heads, d).transpose(1, 2)
            cos, sin = rand(1, 1, s, d), rand(1, 1, s, d)
            st = time_op(lambda: (PlainLlama.rope(q, cos, sin), PlainLlama.rope(k, cos, sin)))
            rows.append(dict(op="rope", batch=b, tokens=s, heads=heads, kv_heads=kv_heads,
                             head_dim=d, **st))
    for r in rows:
        r["split"] = split_of(r)
    return rows


# --------------------------------------------------------------------------- whole steps
def load_config(name):
    with open(os.path.join(ROOT, "data", "models", name + ".json")) as f:
        return json.load(f)


class PlainLlama(torch.nn.Module):
    """Llama in plain PyTorch ops: separate q/k/v and gate/up projections (as Hugging Face
    runs them), F.rms_norm, RoPE by rotate-half, SDPA with GQA, a static KV cache written
    with index_copy_, and the LM head on the last token of each sequence."""

    def __init__(self, cfg, max_batch, max_seq):
        super().__init__()
        h, self.nh, self.nkv = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"]
        self.hd = cfg.get("head_dim") or h // self.nh
        inter, vocab, layers = cfg["intermediate_size"], cfg["vocab_size"], cfg["num_hidden_layers"]
        self.eps = cfg["rms_norm_eps"]
        s = 0.02
        self.emb = rand(vocab, h) * s
        self.layers = []
        for _ in range(layers):
            self.layers.append(dict(
                n1=torch.ones(h, device=DEV, dtype=BF16), n2=torch.ones(h, device=DEV, dtype=BF16),
                wq=rand(self.nh * self.hd, h) * s, wk=rand(self.nkv * self.hd, h) * s,
                wv=rand(self.nkv * self.hd, h) * s, wo=rand(h, self.nh * self.hd) * s,
                wg=rand(inter, h) * s, wu=rand(inter, h) * s, wd=rand(h, inter) * s,
                kc=torch.zeros(max_batch, self.nkv, max_seq, self.hd, device=DEV, dtype=BF16),
                vc=torch.zeros(max_batch, self.nkv, max_seq, self.hd, device=DEV, dtype=BF16)))
        self.norm = torch.ones(h, device=DEV, dtype=BF16)
        self.lm_head = self.emb if cfg.get("tie_word_embeddings") else rand(vocab, h) * s
        inv = 1.0 / (cfg["rope_theta"] ** (torch.arange(0, self.hd, 2, device=DEV).float() / self.hd))
        ang = torch.outer(torch.arange(max_seq, device=DEV).float(), inv)
        self.cos = torch.cat([ang.cos(), ang.cos()], -1).to(BF16)
        self.sin = torch.cat([ang.sin(), ang.sin()], -1).to(BF16)

    @staticmethod
    def rot(x):
        half = x.shape[-1] // 2
        return torch.cat([-x[..., half:], x[..., :half]], -1)

    @staticmethod
    def rope(x, cos, sin):
        """Rotate-half RoPE, on whatever view x is (the layer's are transposed)."""
        return x * cos + PlainLlama.rot(x) * sin

    def forward(self, tokens, pos, ctx_len):
        """tokens [B, S] at positions pos [S]; attention over the cache [0, ctx_len)."""
        b, s = tokens.shape
        x = F.embedding(tokens, self.emb)
        cos, sin = self.cos[pos][None, None], self.sin[pos][None, None]
        for L in self.layers:
            hn = F.rms_norm(x, (x.shape[-1],), L["n1"], self.eps)
            q = F.linear(hn, L["wq"]).view(b, s, self.nh, self.hd).transpose(1, 2)
            k = F.linear(hn, L["wk"]).view(b, s, self.nkv, self.hd).transpose(1, 2)
            v = F.linear(hn, L["wv"]).view(b, s, self.nkv, self.hd).transpose(1, 2)
            q, k = self.rope(q, cos, sin), self.rope(k, cos, sin)
            L["kc"][:b].index_copy_(2, pos, k)
            L["vc"][:b].index_copy_(2, pos, v)
            kk, vv = L["kc"][:b, :, :ctx_len], L["vc"][:b, :, :ctx_len]
            a = F.scaled_dot_product_attention(q, kk, vv, is_causal=(s > 1), enable_gqa=True)
            x = x + F.linear(a.transpose(1, 2).reshape(b, s, -1), L["wo"])
            hn = F.rms_norm(x, (x.shape[-1],), L["n2"], self.eps)
            x = x + F.linear(F.silu(F.linear(hn, L["wg"])) * F.linear(hn, L["wu"]), L["wd"])
        x = F.rms_norm(x[:, -1], (x.shape[-1],), self.norm, self.eps)
        return torch.argmax(F.linear(x, self.lm_head), -1)


def capture_graph(fn):
    """fn() captured in a CUDA graph, after one warm-up run on a side stream."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn()
    return g


# --host-op-each-step: the host's speed measured right before each eager step (host drift).
HOST_OP_EACH_STEP = False


def host_op_s():
    """Host-bound time per tiny eager op (200 x.add_ on 1 element), as launch_costs times it."""
    x = rand(1)
    def ops():
        for _ in range(200):
            x.add_(1e-3)
    return time_op(ops, repeats=5, warmup=1, flush=False)["median_s"] / 200


def time_step(model, tokens, pos, ctx_len, repeats=15, eager_repeats=30):
    extra = {"eager_host_op_s": host_op_s()} if HOST_OP_EACH_STEP else {}
    # The eager run is host bound for small steps: keep the garbage collector out of it.
    gc.collect()
    gc.disable()
    eager = time_op(lambda: model(tokens, pos, ctx_len), repeats=eager_repeats, warmup=3,
                    flush=False)
    gc.enable()
    g = capture_graph(lambda: model(tokens, pos, ctx_len))
    graph = time_op(g.replay, repeats=repeats, warmup=2, flush=False)
    del g
    return {"graph": graph, "eager": eager, **extra}


STEP_PLAN = {  # model: max batch, prefill (batch, tokens), decode (batch, context)
    "llama-3.2-1b": dict(max_batch=128,
                         prefill=[(1, 128), (1, 512), (1, 2048), (4, 512), (8, 1024)],
                         decode=[(1, 512), (1, 2048), (8, 1024), (16, 512), (32, 1024),
                                 (64, 2048), (128, 1024)]),
    "llama-3.2-3b": dict(max_batch=64, prefill=[(1, 512), (1, 2048), (4, 1024)],
                         decode=[(1, 512), (8, 2048), (32, 1024), (64, 4096)]),
    "llama-3-8b": dict(max_batch=64, prefill=[(1, 512), (1, 2048), (4, 1024)],
                       decode=[(1, 512), (8, 1024), (32, 2048), (64, 1024)]),
}


# --plan host (validation/host_gpu.sh): a small set for the host rule, under a minute:
# decode at batch 1 and 8, context 512 and 2048, prefill of 128 and 512 tokens.
HOST_STEP_PLAN = {
    name: dict(max_batch=8, prefill=[(1, 128), (1, 512)],
               decode=[(1, 512), (1, 2048), (8, 512), (8, 2048)])
    for name in ("llama-3.2-1b", "llama-3.2-3b", "llama-3-8b")
}


def whole_steps(models=None, plan=None):
    rows = []
    for name, p in (plan or STEP_PLAN).items():
        if models and name not in models:
            continue
        cfg = load_config(name)
        m = PlainLlama(cfg, max_batch=p["max_batch"], max_seq=4096 + 8)
        with torch.no_grad():
            for b, s in p["prefill"]:
                toks = torch.randint(0, cfg["vocab_size"], (b, s), device=DEV)
                pos = torch.arange(s, device=DEV)
                r = time_step(m, toks, pos, s)
                rows.append(dict(model=name, phase="prefill", batch=b, tokens=s, **r))
            for b, ctx in p["decode"]:
                toks = torch.randint(0, cfg["vocab_size"], (b, 1), device=DEV)
                pos = torch.tensor([ctx - 1], device=DEV)
                r = time_step(m, toks, pos, ctx)
                rows.append(dict(model=name, phase="decode", batch=b, context=ctx, **r))
        del m
        torch.cuda.empty_cache()
    return rows


def hf_eager():
    try:
        import transformers
        from transformers import LlamaConfig, LlamaForCausalLM
    except Exception as e:  # noqa: BLE001
        return {"error": repr(e)}
    cfg = LlamaConfig(**load_config("llama-3.2-1b"))
    torch.manual_seed(0)
    model = LlamaForCausalLM(cfg).to(dtype=BF16, device=DEV).eval()
    out = {"transformers": transformers.__version__, "model": "llama-3.2-1b", "batch": 1}
    with torch.no_grad():
        ids = torch.randint(0, cfg.vocab_size, (1, 512), device=DEV)
        def prefill():
            return model(ids, use_cache=True, logits_to_keep=1)
        out["prefill_512"] = time_op(prefill, repeats=10, warmup=2, flush=False)
        res = prefill()
        past = res.past_key_values
        nxt = res.logits[:, -1:].argmax(-1)
        samples = []
        for _ in range(64):  # 64 real decode steps, context 513..576
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            res = model(nxt, past_key_values=past, use_cache=True)
            nxt = res.logits[:, -1:].argmax(-1)
            torch.cuda.synchronize()
            samples.append(time.perf_counter() - t0)
            past = res.past_key_values
        out["decode_step_ctx_513_576"] = stats(samples[4:])
    return out


def main():
    import argparse
    ap = argparse.ArgumentParser()
    ap.add_argument("path", nargs="?",
                    default=os.path.join(os.environ.get("OUT", "."), "torch_reference.json"))
    ap.add_argument("--only", default="headline,launch,ops,steps,hf_eager",
                    help="comma-separated sections to run")
    ap.add_argument("--models", default="", help="comma-separated models for 'steps'")
    ap.add_argument("--plan", default="full", choices=("full", "host"),
                    help="steps: the full grid, or the host rule's small set (HOST_STEP_PLAN)")
    ap.add_argument("--host-op-each-step", action="store_true",
                    help="steps: time 200 tiny eager ops right before each eager step "
                         "(row field eager_host_op_s: the host's speed at that moment)")
    args = ap.parse_args()
    global HOST_OP_EACH_STEP
    HOST_OP_EACH_STEP = args.host_op_each_step
    path = args.path
    sections = args.only.split(",")
    torch.manual_seed(0)
    p = torch.cuda.get_device_properties(0)
    result = {
        "device": {"name": p.name, "sm_count": p.multi_processor_count,
                   "memory_bytes": p.total_memory, "torch": torch.__version__,
                   "cuda": torch.version.cuda},
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "method": "CUDA events around each call; median of repeats; L2 flushed before each "
                  "timed operator call (512 MiB write); random bf16 inputs",
    }
    for key, fn in (("headline", headline), ("launch", launch_costs), ("ops", op_grid),
                    ("steps", lambda: whole_steps(args.models.split(",") if args.models else None,
                                 HOST_STEP_PLAN if args.plan == "host" else None)), ("hf_eager", hf_eager), ("rope_ops", rope_grid)):
        if key not in sections:
            continue
        t0 = time.time()
        result[key] = fn()
        print(f"{key}: {time.time() - t0:.1f} s", flush=True)
        with open(path, "w") as f:
            json.dump(result, f, indent=1)
    if "headline" in result:
        h = result["headline"]
        print(f"bf16 matmul 8192^3: {h['bf16_matmul_8192']['flops_per_s'] / 1e12:.1f} TFLOP/s")
        print(f"copy 1 GiB: {h['copy_1gib']['bytes_per_s'] / 1e12:.3f} TB/s (read+write)")
    if "launch" in result:
        print(json.dumps(result["launch"]))
    for r in result.get("steps", []):
        print(r["model"], r["phase"], r["batch"], r.get("tokens", r.get("context")),
              f"graph {r['graph']['median_s'] * 1e3:.3f} ms  eager {r['eager']['median_s'] * 1e3:.3f} ms")
    if "hf_eager" in result:
        print(json.dumps(result["hf_eager"], default=str)[:600])


if __name__ == "__main__":
    main()
