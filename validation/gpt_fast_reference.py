#!/usr/bin/env python3
"""torch.compile as the engine's speed reference: gpt-fast's recipe (issue 38).

The model is Llama in gpt-fast's layout and style, written here (no gpt-fast code): an
nn.Module whose weights are parameters, one fused QKV projection and one fused gate/up
projection per layer, RMSNorm in fp32, RoPE on fp32, a static KV cache held as registered
buffers and written by index (as gpt-fast's KVCache.update), SDPA with GQA, the LM head and an
argmax on each sequence's last token. Random bf16 weights at the shipped model's shapes.

Each step is compiled as gpt-fast compiles its decode step: torch.compile(mode="reduce-overhead",
fullgraph=True) (Inductor's kernels replayed in a CUDA graph), with gpt-fast's Inductor switches
(coordinate_descent_tuning, unique kernel names, the FX graph cache). Three choices favour the
reference over gpt-fast itself, so the comparison is conservative for the engine: prefill
attention runs SDPA with is_causal over the prompt only (flash attention; gpt-fast passes an
explicit mask over the whole cache), decode attention reads the cache up to the context only
(gpt-fast masks the whole static cache), and prefill computes the LM head on the last token
only (gpt-fast's forward computes it on every token). One departure may favour either side:
gpt-fast runs its decode step's SDPA with the math backend (so that Inductor generates the
attention); here SDPA keeps its default backend (flash attention with GQA), which matters where
the KV bytes are large (batch 64), not at batch 1. Timing: N steps back to back between two
CUDA events (what a generation loop pays, host included), median over repeats.
"""
import statistics
import time

import torch
import torch.nn.functional as F

DEV = "cuda"
BF16 = torch.bfloat16


def configure_inductor():
    """gpt-fast's Inductor settings (generate.py)."""
    import torch._inductor.config as ic
    ic.coordinate_descent_tuning = True
    ic.triton.unique_kernel_names = True
    ic.fx_graph_cache = True


class Layer(torch.nn.Module):
    def __init__(self, h, nh, nkv, hd, inter, max_batch, max_seq, scale):
        super().__init__()
        p = lambda *shape: torch.nn.Parameter(  # noqa: E731
            torch.randn(*shape, device=DEV, dtype=BF16) * scale, requires_grad=False)
        self.wqkv = p((nh + 2 * nkv) * hd, h)
        self.wo = p(h, nh * hd)
        self.w13 = p(2 * inter, h)
        self.w2 = p(h, inter)
        self.attention_norm = torch.nn.Parameter(torch.ones(h, device=DEV, dtype=BF16),
                                                 requires_grad=False)
        self.ffn_norm = torch.nn.Parameter(torch.ones(h, device=DEV, dtype=BF16),
                                           requires_grad=False)
        cache = (max_batch, nkv, max_seq, hd)
        self.register_buffer("k_cache", torch.zeros(cache, device=DEV, dtype=BF16))
        self.register_buffer("v_cache", torch.zeros(cache, device=DEV, dtype=BF16))


def rms_norm(x, weight, eps):
    """gpt-fast's RMSNorm: in fp32, back to the input's type, times the weight."""
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).type_as(x) * weight


def apply_rope(x, freqs):
    """gpt-fast's rotary embedding: interleaved pairs rotated in fp32. x [B, S, H, D]."""
    xs = x.float().reshape(*x.shape[:-1], -1, 2)
    f = freqs.view(1, xs.size(1), 1, xs.size(3), 2)
    out = torch.stack([xs[..., 0] * f[..., 0] - xs[..., 1] * f[..., 1],
                       xs[..., 1] * f[..., 0] + xs[..., 0] * f[..., 1]], -1)
    return out.flatten(3).type_as(x)


class GptFastLlama(torch.nn.Module):
    def __init__(self, cfg, max_batch, max_seq):
        super().__init__()
        h, nh, nkv = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"]
        hd = cfg.get("head_dim") or h // nh
        self.h, self.nh, self.nkv, self.hd = h, nh, nkv, hd
        self.inter = cfg["intermediate_size"]
        self.eps = cfg["rms_norm_eps"]
        vocab = cfg["vocab_size"]
        scale = 0.02
        self.tok_embeddings = torch.nn.Parameter(
            torch.randn(vocab, h, device=DEV, dtype=BF16) * scale, requires_grad=False)
        self.layers = torch.nn.ModuleList(
            Layer(h, nh, nkv, hd, self.inter, max_batch, max_seq, scale)
            for _ in range(cfg["num_hidden_layers"]))
        self.norm = torch.nn.Parameter(torch.ones(h, device=DEV, dtype=BF16), requires_grad=False)
        self.output = torch.nn.Parameter(
            torch.randn(vocab, h, device=DEV, dtype=BF16) * scale, requires_grad=False)
        inv = 1.0 / (cfg["rope_theta"] ** (torch.arange(0, hd, 2, device=DEV).float() / hd))
        ang = torch.outer(torch.arange(max_seq, device=DEV).float(), inv)
        self.register_buffer("freqs", torch.stack([ang.cos(), ang.sin()], -1))

    def forward(self, tokens, input_pos, ctx_len: int):
        """tokens [B, S] at positions input_pos [S]; attention over the cache [0, ctx_len)."""
        b, s = tokens.shape
        qd, kvd = self.nh * self.hd, self.nkv * self.hd
        x = F.embedding(tokens, self.tok_embeddings)
        freqs = self.freqs[input_pos]
        for layer in self.layers:
            hn = rms_norm(x, layer.attention_norm, self.eps)
            q, k, v = F.linear(hn, layer.wqkv).split([qd, kvd, kvd], -1)
            q = apply_rope(q.view(b, s, self.nh, self.hd), freqs).transpose(1, 2)
            k = apply_rope(k.view(b, s, self.nkv, self.hd), freqs).transpose(1, 2)
            v = v.view(b, s, self.nkv, self.hd).transpose(1, 2)
            layer.k_cache[:b, :, input_pos] = k  # gpt-fast's KVCache.update
            layer.v_cache[:b, :, input_pos] = v
            kk, vv = layer.k_cache[:b, :, :ctx_len], layer.v_cache[:b, :, :ctx_len]
            a = F.scaled_dot_product_attention(q, kk, vv, is_causal=s > 1, enable_gqa=True)
            x = x + F.linear(a.transpose(1, 2).reshape(b, s, qd), layer.wo)
            gu = F.linear(rms_norm(x, layer.ffn_norm, self.eps), layer.w13)
            x = x + F.linear(F.silu(gu[..., :self.inter]) * gu[..., self.inter:], layer.w2)
        x = rms_norm(x[:, -1], self.norm, self.eps)
        return torch.argmax(F.linear(x, self.output), -1)


def time_compiled(cfg, batch, tokens, ctx_len, repeats=7, steps=20):
    """Median time of one compiled step: `tokens` new tokens per sequence (1: decode at
    context ctx_len, the new token at position ctx_len - 1; more: a prefill from position 0).
    Returns stats in seconds and the Inductor counters that say whether CUDA graphs ran."""
    from torch._dynamo.utils import counters
    configure_inductor()
    torch._dynamo.reset()
    counters.clear()
    max_seq = (ctx_len + 8 + 7) // 8 * 8  # gpt-fast: the needed length rounded up to 8
    model = GptFastLlama(cfg, batch, max_seq)
    step = torch.compile(model, mode="reduce-overhead", fullgraph=True)
    toks = torch.randint(0, cfg["vocab_size"], (batch, tokens), device=DEV)
    if tokens == 1:
        pos = torch.tensor([ctx_len - 1], device=DEV)
    else:
        pos = torch.arange(tokens, device=DEV)
    with torch.no_grad():
        started = time.perf_counter()
        for _ in range(3):  # compile, record the graph, replay once
            step(toks, pos, ctx_len)
        torch.cuda.synchronize()
        compile_s = time.perf_counter() - started
        samples = []
        for _ in range(repeats):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(steps):
                step(toks, pos, ctx_len)
            end.record()
            torch.cuda.synchronize()
            samples.append(start.elapsed_time(end) * 1e-3 / steps)
    skips = dict(counters["inductor"]).get("cudagraph_skips", 0)
    del step, model
    torch._dynamo.reset()
    torch.cuda.empty_cache()
    s = sorted(samples)
    return {"median_s": statistics.median(s), "min_s": s[0], "max_s": s[-1],
            "samples": len(s), "steps_per_sample": steps, "cudagraph_skips": skips,
            "compile_s": compile_s}
