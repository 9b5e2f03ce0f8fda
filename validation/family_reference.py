#!/usr/bin/env python3
"""Ground truth for issue 17 §3: model families never measured, gpt-fast layouts, softmax.

Timed exactly as validation/torch_reference.py times its rows (its helpers are imported, not
copied): operators with CUDA events around the single call, median of 25, L2 flushed before
every timed call; whole steps by CUDA-graph replay and eagerly (torch_reference.time_step).

Sections (--only, comma-separated; all by default, run in this order):
  launch   torch_reference.launch_costs() first, and again as "launch_after_steps" after the
           steps: the host constants of this run, to read its eager steps against.
  linear   F.linear at the projection shapes of Qwen2.5 7B, Qwen2.5 1.5B and Mistral 7B's LM
           head (its other shapes are Llama 3 8B's), and the fused QKV and gate/up shapes of
           Llama 3.2 1B and Llama 3 8B (gpt-fast); over torch_reference.TOKENS. With bias (Qwen's
           q and k/v projections, as Qwen2 runs them) in "ops_pending" (op "linear_bias").
  silu     silu(x[..., :n]) * x[..., n:] on the two halves of one fused gate/up output
           [tokens, 2n] (strided views, as gpt-fast and vLLM's unfused SiluAndMul do; op
           "silu_mul_halves", in "ops_pending"), and the contiguous F.silu(g) * u beside it at
           the same shapes (op "silu_mul_eager", in "ops"); tokens as torch_reference's grid,
           n = 8192, 14336 (Llama), 8960 (Qwen2.5 1.5B), 18944 (Qwen2.5 7B).
  rope     PlainLlama's RoPE on q and k taken as views of one fused QKV output (op
           "rope_fused_qkv", in "ops_pending"), at torch_reference's RoPE shapes.
  softmax  row softmax over a grid of rows x columns: bf16 in and out (op "softmax", in "ops"),
           fp32 in and out (op "softmax_fp32": SDPA's math path upcasts) and bf16 in with
           dtype=float32 (op "softmax_bf16_to_fp32": Hugging Face eager attention), both in
           "ops_pending".
  steps    whole steps of a plain PyTorch model at the real shapes (random bf16 weights, static
           KV cache): Qwen2.5 7B and 1.5B (q/k/v F.linear with bias=True; 1.5B ties its
           embeddings) and Mistral 7B v0.3 (no sliding window), separate projections as
           torch_reference's PlainLlama runs them ("steps"). Configs: data/models/*.json.
  fused    Llama 3.2 1B and Llama 3 8B steps in gpt-fast's layout: one QKV F.linear split into
           q, k, v views, one gate/up F.linear whose halves go to SiLU x mul as strided views
           ("fused_steps", "layout": "fused_qkv_gate_up"), and the same steps in PlainLlama's
           layout in the same run ("steps", "control": true) for a same-day comparison.
  launch_after_steps  (see launch)
  kernels  (last: the profiler may leave hooks behind) the CUDA kernels one call launches
           (torch.profiler) for one shape of each operator variant above: which elementwise
           kernel (vectorized or not) runs a strided view, whether a bias adds a kernel, which
           softmax kernel runs each dtype.

Output (argv[1], written again after every section and model): one JSON object
  device, measured_at, method, split_rule, elapsed_s,
  launch, launch_after_steps            as torch_reference's "launch"
  ops          rows `inferlab validate --data` and `fit --data` read today (op linear,
               silu_mul_eager, softmax; fields as in torch_reference's "ops")
  steps        rows validate reads today: model (a data/models name), phase, batch,
               tokens (prefill) or context (decode), graph and eager {median_s, ...}
  ops_pending  rows of op kinds the C++ does not know yet (linear_bias, silu_mul_halves,
               rope_fused_qkv, softmax_fp32, softmax_bf16_to_fp32); `validate` and `fit` read
               them too (since docs/MEASUREMENTS.md section 16)
  fused_steps  step rows in gpt-fast's layout; `validate` reads them (row "layout")
  kernels      {case: {kernel name: launches}}
  failed       cases that raised (out of memory or otherwise), with the error; never in the
               lists above, so every row there has a median_s
Every op and step row has "split": "fit" or "holdout" (SPLIT_RULE below, fixed before any
fit, also written into the file).

Usage on the device (about 3 minutes on an H100):
  python3 validation/family_reference.py $OUT/family_reference.json
  [--only launch,linear,silu,rope,softmax,steps,fused,launch_after_steps,kernels]
  [--budget-s 450]
Progress goes to stderr with the elapsed time; past --budget-s the remaining cases are skipped
(listed in "skipped"), so the run ends in time with what it has.
"""
import argparse
import collections
import gc
import json
import os
import sys
import time
import zlib

import torch
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_reference import (DEV, ROPE_HEADS, TOKENS, PlainLlama, launch_costs,  # noqa: E402
                             load_config, rand, split_of, time_op, time_step)

T0 = time.time()

SPLIT_RULE = (
    "Fixed before any fit. Whole steps (steps, fused_steps): holdout, always (validate counts "
    "every step as held out; nothing is fitted on steps). Operators: holdout when the row "
    "belongs to Qwen2.5 1.5B (model qwen2.5-1.5b, or intermediate 8960): the one family no fit "
    "may see, the check of 'any Llama-family shape'; or when torch_reference.split_of says so "
    "(its grid points between fitted ones: tokens 4096, batch 2 or 16, hidden 3072, ...); or "
    "when crc32 of the shape (m,n,k / tokens,intermediate / rows,cols / batch,tokens,heads; "
    "never the dtype or layout, so every variant of a shape shares its split) is 0 mod 5. "
    "Everything else: fit.")

HELD_OUT_MODEL = "qwen2.5-1.5b"
HELD_OUT_INTERMEDIATE = 8960  # Qwen2.5 1.5B's MLP width


def log(msg):
    print(f"[{time.time() - T0:7.1f} s] {msg}", file=sys.stderr, flush=True)


def shape_key(row):
    keys = ("m", "n", "k", "tokens", "intermediate", "rows", "cols", "batch", "heads",
            "kv_heads", "head_dim")
    return "|".join(f"{k}={row[k]}" for k in keys if k in row)


def family_split(row):
    """The rule in SPLIT_RULE, for one operator row."""
    if row.get("model") == HELD_OUT_MODEL or row.get("intermediate") == HELD_OUT_INTERMEDIATE:
        return "holdout"
    if split_of(row) == "holdout":
        return "holdout"
    return "holdout" if zlib.crc32(shape_key(row).encode()) % 5 == 0 else "fit"


class Run:
    """The output document, the time budget and the per-case error handling."""

    def __init__(self, path, budget_s):
        self.path, self.budget_s = path, budget_s
        p = torch.cuda.get_device_properties(0)
        self.doc = {
            "device": {"name": p.name, "sm_count": p.multi_processor_count,
                       "memory_bytes": p.total_memory, "torch": torch.__version__,
                       "cuda": torch.version.cuda},
            "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "method": "as validation/torch_reference.py: CUDA events around each call; median "
                      "of repeats; L2 flushed before each timed operator call (512 MiB write); "
                      "random bf16 inputs; steps by CUDA-graph replay (15) and eagerly (30)",
            "script": "validation/family_reference.py",
            "split_rule": SPLIT_RULE,
            "ops": [], "steps": [], "ops_pending": [], "fused_steps": [], "kernels": {},
            "failed": [], "skipped": [],
        }

    def over_budget(self):
        return time.time() - T0 > self.budget_s

    def case(self, what, fn):
        """fn() or None: a case that raises is recorded in "failed" and the run goes on; past
        the budget the case is only listed in "skipped"."""
        if self.over_budget():
            self.doc["skipped"].append(what)
            return None
        try:
            return fn()
        except Exception as e:  # noqa: BLE001  (OOM is torch.cuda.OutOfMemoryError)
            oom = isinstance(e, torch.cuda.OutOfMemoryError)
            self.doc["failed"].append(dict(what, error=("out of memory: " if oom else "")
                                           + repr(e)[:400]))
            log(f"FAILED {what}: {repr(e)[:200]}")
            gc.enable()  # time_step disables it around its eager run
            gc.collect()
            torch.cuda.empty_cache()
            return None

    def op(self, key, row, fn):
        """Times fn() as torch_reference times an operator; appends row + timing to doc[key]."""
        st = self.case(row, lambda: time_op(fn))
        if st is not None:
            self.doc[key].append(dict(row, **st, split=family_split(row)))

    def write(self):
        self.doc["elapsed_s"] = time.time() - T0
        with open(self.path, "w") as f:
            json.dump(self.doc, f, indent=1)


# --------------------------------------------------------------------------- operators
FAMILY_LINEAR = {  # (name, N, K): q (also o_proj's shape), kv, gate (= up), down, LM head
    "qwen2.5-7b": [("q", 3584, 3584), ("kv", 512, 3584), ("gate", 18944, 3584),
                   ("down", 3584, 18944), ("lm_head", 152064, 3584)],
    "qwen2.5-1.5b": [("q", 1536, 1536), ("kv", 256, 1536), ("gate", 8960, 1536),
                     ("down", 1536, 8960), ("lm_head", 151936, 1536)],
    "mistral-7b": [("lm_head", 32768, 4096)],  # its other shapes are Llama 3 8B's
}
FUSED_LINEAR = {  # gpt-fast: one QKV projection, one gate/up projection
    "llama-3.2-1b": [("qkv_fused", 3072, 2048), ("gate_up_fused", 16384, 2048)],
    "llama-3-8b": [("qkv_fused", 6144, 4096), ("gate_up_fused", 28672, 4096)],
}
BIAS_LINEAR = ("q", "kv")  # Qwen2: bias on q, k and v only


def linear_section(run):
    for table in (FAMILY_LINEAR, FUSED_LINEAR):
        for model, shapes in table.items():
            for name, n, k in shapes:
                w = rand(n, k)
                bias = rand(n) if model.startswith("qwen") and name in BIAS_LINEAR else None
                for m in TOKENS:
                    if name == "lm_head" and m > 512:
                        continue
                    x = rand(m, k)
                    row = dict(op="linear", model=model, proj=name, m=m, n=n, k=k)
                    run.op("ops", row, lambda: F.linear(x, w))
                    if bias is not None:
                        run.op("ops_pending", dict(row, op="linear_bias"),
                               lambda: F.linear(x, w, bias))
                    del x
                del w, bias
            log(f"linear {model}: {len(run.doc['ops'])} ops, "
                f"{len(run.doc['ops_pending'])} pending")


SILU_TOKENS = (1, 16, 128, 512, 2048, 4096, 8192, 32768)  # torch_reference's silu_mul grid
SILU_WIDTHS = (8192, 14336, 8960, 18944)


def silu_section(run):
    for inter in SILU_WIDTHS:
        for t in SILU_TOKENS:
            row = dict(tokens=t, intermediate=inter)
            x = rand(t, 2 * inter)  # one fused gate/up output
            g_view, u_view = x[..., :inter], x[..., inter:]
            run.op("ops_pending", dict(row, op="silu_mul_halves", row_stride=2 * inter),
                   lambda: F.silu(g_view) * u_view)
            del x, g_view, u_view
            g, u = rand(t, inter), rand(t, inter)
            run.op("ops", dict(row, op="silu_mul_eager"), lambda: F.silu(g) * u)
            del g, u
        log(f"silu_mul width {inter}")


def fused_qkv_views(b, s, heads, kv_heads, d):
    """q and k as gpt-fast gets them: views of one fused QKV output, transposed."""
    qkv = rand(b, s, (heads + 2 * kv_heads) * d)
    q, k, _ = qkv.split([heads * d, kv_heads * d, kv_heads * d], -1)
    return (q.view(b, s, heads, d).transpose(1, 2), k.view(b, s, kv_heads, d).transpose(1, 2))


def rope_section(run):
    for heads, kv_heads, d in ROPE_HEADS:
        for b, s in [(1, t) for t in (1, 16, 128, 512, 2048, 4096, 8192)] + [(4, 1024)]:
            q, k = fused_qkv_views(b, s, heads, kv_heads, d)
            cos, sin = rand(1, 1, s, d), rand(1, 1, s, d)
            row = dict(op="rope_fused_qkv", batch=b, tokens=s, heads=heads, kv_heads=kv_heads,
                       head_dim=d)
            run.op("ops_pending", row,
                   lambda: (PlainLlama.rope(q, cos, sin), PlainLlama.rope(k, cos, sin)))
            del q, k, cos, sin
    log("rope on fused QKV views")


# Rows x columns. Attention's unfused path: rows = batch x heads x query tokens, columns = keys
# (decode: 32..4096 rows; prefill: up to batch x 32 x tokens). Sampling: rows = sequences,
# columns = the vocabulary. Odd sizes: unaligned rows (a column count not a multiple of 8).
SOFTMAX_ATTENTION_ROWS = (32, 128, 512, 2048, 8192, 32768, 131072)
SOFTMAX_ATTENTION_COLS = (128, 256, 512, 1024, 2048, 4096, 8192)
SOFTMAX_VOCAB = [(r, c) for r in (1, 8, 64, 512) for c in (32768, 128256, 152064)]
SOFTMAX_ODD = [(96, 333), (1000, 1500), (3000, 777), (20000, 2500), (448, 5000), (7, 100000)]
SOFTMAX_MAX_ELEMS = 1 << 27  # 256 MiB of bf16, 512 MiB of fp32 in and as much out
SOFTMAX_VARIANTS = (  # (op, input dtype, output dtype, where the row goes)
    ("softmax", torch.bfloat16, None, "ops"),
    ("softmax_fp32", torch.float32, None, "ops_pending"),
    ("softmax_bf16_to_fp32", torch.bfloat16, torch.float32, "ops_pending"),
)


def softmax_shapes():
    grid = [(r, c) for r in SOFTMAX_ATTENTION_ROWS for c in SOFTMAX_ATTENTION_COLS]
    return [(r, c) for r, c in grid + SOFTMAX_VOCAB + SOFTMAX_ODD if r * c <= SOFTMAX_MAX_ELEMS]


def softmax_call(x, out_dtype):
    if out_dtype is None:
        return lambda: torch.softmax(x, dim=-1)
    return lambda: torch.softmax(x, dim=-1, dtype=out_dtype)


def softmax_section(run):
    for rows, cols in softmax_shapes():
        for op, in_dtype, out_dtype, key in SOFTMAX_VARIANTS:
            x = rand(rows, cols, dtype=in_dtype)
            row = dict(op=op, rows=rows, cols=cols, dtype=str(in_dtype).replace("torch.", ""),
                       out_dtype=str(out_dtype or in_dtype).replace("torch.", ""))
            run.op(key, row, softmax_call(x, out_dtype))
            del x
    log(f"softmax: {len(softmax_shapes())} shapes x {len(SOFTMAX_VARIANTS)} dtypes")


def kernels_of(fn):
    """{kernel name: launches} of one call of fn (after a warm-up call)."""
    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    return dict(collections.Counter(e.name for e in prof.events()
                                    if e.device_type == torch.autograd.DeviceType.CUDA))


def kernels_section(run):
    cases = {}
    for m in (1, 16, 512):
        x, w, bias = rand(m, 3584), rand(3584, 3584), rand(3584)
        cases[f"linear m={m} n=3584 k=3584"] = (lambda x=x, w=w: F.linear(x, w))
        cases[f"linear_bias m={m} n=3584 k=3584"] = (lambda x=x, w=w, bias=bias:
                                                     F.linear(x, w, bias))
    for t in (16, 2048):
        x = rand(t, 2 * 14336)
        cases[f"silu_mul_halves t={t} i=14336"] = (
            lambda x=x: F.silu(x[..., :14336]) * x[..., 14336:])
        g, u = rand(t, 14336), rand(t, 14336)
        cases[f"silu_mul_eager t={t} i=14336"] = (lambda g=g, u=u: F.silu(g) * u)
    for rows, cols in ((32, 2048), (65536, 512), (4096, 2048), (1, 128256), (1000, 1500)):
        for op, in_dtype, out_dtype, _ in SOFTMAX_VARIANTS:
            x = rand(rows, cols, dtype=in_dtype)
            cases[f"{op} r={rows} c={cols}"] = softmax_call(x, out_dtype)
    q, k = fused_qkv_views(1, 512, 32, 8, 128)
    cos, sin = rand(1, 1, 512, 128), rand(1, 1, 512, 128)
    cases["rope_fused_qkv b=1 t=512 heads=32 d=128"] = (
        lambda: (PlainLlama.rope(q, cos, sin), PlainLlama.rope(k, cos, sin)))
    ql = rand(1, 512, 32 * 128)
    qt = ql.view(1, 512, 32, 128).transpose(1, 2)
    cases["rope (PlainLlama q view) b=1 t=512 heads=32 d=128"] = (
        lambda: PlainLlama.rope(qt, cos, sin))
    for name, fn in cases.items():
        names = run.case({"kernels": name}, lambda: kernels_of(fn))
        if names is not None:
            run.doc["kernels"][name] = names
    log(f"kernels of {len(run.doc['kernels'])} calls")


# --------------------------------------------------------------------------- whole steps
class FamilyLlama(PlainLlama):
    """PlainLlama (same ops, same order) with what the families add:
    * QKV bias (Qwen2: model_type qwen2; Llama configs: attention_bias), as F.linear's bias;
    * fused=True: gpt-fast's layout: one QKV F.linear whose output is split into q, k, v views,
      one gate/up F.linear whose halves go to SiLU x mul as strided views."""

    def __init__(self, cfg, max_batch, max_seq, fused=False):
        super().__init__(cfg, max_batch, max_seq)
        self.fused = fused
        self.qkv_bias = cfg.get("model_type") == "qwen2" or bool(cfg.get("attention_bias"))
        s = 0.02
        for L in self.layers:
            if self.qkv_bias:
                L["bq"] = rand(self.nh * self.hd) * s
                L["bk"] = rand(self.nkv * self.hd) * s
                L["bv"] = rand(self.nkv * self.hd) * s
            if fused:
                L["wqkv"] = torch.cat([L.pop("wq"), L.pop("wk"), L.pop("wv")])
                L["wgu"] = torch.cat([L.pop("wg"), L.pop("wu")])
                if self.qkv_bias:
                    L["bqkv"] = torch.cat([L.pop("bq"), L.pop("bk"), L.pop("bv")])

    def forward(self, tokens, pos, ctx_len):
        """As PlainLlama.forward; only the projections differ (bias, fused layout)."""
        b, s = tokens.shape
        qd, kvd = self.nh * self.hd, self.nkv * self.hd
        x = F.embedding(tokens, self.emb)
        cos, sin = self.cos[pos][None, None], self.sin[pos][None, None]
        for L in self.layers:
            hn = F.rms_norm(x, (x.shape[-1],), L["n1"], self.eps)
            if self.fused:
                q, k, v = F.linear(hn, L["wqkv"], L.get("bqkv")).split([qd, kvd, kvd], -1)
            else:
                q = F.linear(hn, L["wq"], L.get("bq"))
                k = F.linear(hn, L["wk"], L.get("bk"))
                v = F.linear(hn, L["wv"], L.get("bv"))
            q = q.view(b, s, self.nh, self.hd).transpose(1, 2)
            k = k.view(b, s, self.nkv, self.hd).transpose(1, 2)
            v = v.view(b, s, self.nkv, self.hd).transpose(1, 2)
            q, k = self.rope(q, cos, sin), self.rope(k, cos, sin)
            L["kc"][:b].index_copy_(2, pos, k)
            L["vc"][:b].index_copy_(2, pos, v)
            kk, vv = L["kc"][:b, :, :ctx_len], L["vc"][:b, :, :ctx_len]
            a = F.scaled_dot_product_attention(q, kk, vv, is_causal=(s > 1), enable_gqa=True)
            x = x + F.linear(a.transpose(1, 2).reshape(b, s, -1), L["wo"])
            hn = F.rms_norm(x, (x.shape[-1],), L["n2"], self.eps)
            if self.fused:
                gu = F.linear(hn, L["wgu"])
                d = gu.shape[-1] // 2
                act = F.silu(gu[..., :d]) * gu[..., d:]
            else:
                act = F.silu(F.linear(hn, L["wg"])) * F.linear(hn, L["wu"])
            x = x + F.linear(act, L["wd"])
        x = F.rms_norm(x[:, -1], (x.shape[-1],), self.norm, self.eps)
        return torch.argmax(F.linear(x, self.lm_head), -1)


SMALL_PLAN = dict(max_batch=128,  # torch_reference's Llama 3.2 1B plan
                  prefill=[(1, 128), (1, 512), (1, 2048), (4, 512), (8, 1024)],
                  decode=[(1, 512), (1, 2048), (8, 1024), (16, 512), (32, 1024), (64, 2048),
                          (128, 1024)])
LARGE_PLAN = dict(max_batch=64,  # torch_reference's Llama 3 8B plan, plus two points
                  prefill=[(1, 128), (1, 512), (1, 2048), (4, 1024)],
                  decode=[(1, 512), (8, 1024), (16, 2048), (32, 2048), (64, 1024)])
FAMILY_STEPS = {"qwen2.5-1.5b": SMALL_PLAN, "qwen2.5-7b": LARGE_PLAN, "mistral-7b": LARGE_PLAN}
FUSED_STEPS = {  # exactly torch_reference.STEP_PLAN's points for these two models
    "llama-3.2-1b": dict(max_batch=128,
                         prefill=[(1, 128), (1, 512), (1, 2048), (4, 512), (8, 1024)],
                         decode=[(1, 512), (1, 2048), (8, 1024), (16, 512), (32, 1024),
                                 (64, 2048), (128, 1024)]),
    "llama-3-8b": dict(max_batch=64, prefill=[(1, 512), (1, 2048), (4, 1024)],
                       decode=[(1, 512), (8, 1024), (32, 2048), (64, 1024)]),
}


def max_seq_of(plan):
    return max([s for _, s in plan["prefill"]] + [c for _, c in plan["decode"]]) + 8


def step_rows(run, key, name, plan, make_model, extra):
    """Every prefill and decode point of plan on the model make_model() builds."""
    cfg = load_config(name)
    m = run.case(dict(model=name, build=key, **extra), lambda: make_model(cfg))
    if m is None:
        return
    with torch.no_grad():
        for b, s in plan["prefill"]:
            row = dict(model=name, phase="prefill", batch=b, tokens=s, **extra)
            toks = torch.randint(0, cfg["vocab_size"], (b, s), device=DEV)
            pos = torch.arange(s, device=DEV)
            r = run.case(row, lambda: time_step(m, toks, pos, s))
            if r is not None:
                run.doc[key].append(dict(row, **r, split="holdout"))
                log(f"{key} {name} prefill {b}x{s}: graph {r['graph']['median_s'] * 1e3:.2f} ms"
                    f", eager {r['eager']['median_s'] * 1e3:.2f} ms")
        for b, ctx in plan["decode"]:
            row = dict(model=name, phase="decode", batch=b, context=ctx, **extra)
            toks = torch.randint(0, cfg["vocab_size"], (b, 1), device=DEV)
            pos = torch.tensor([ctx - 1], device=DEV)
            r = run.case(row, lambda: time_step(m, toks, pos, ctx))
            if r is not None:
                run.doc[key].append(dict(row, **r, split="holdout"))
                log(f"{key} {name} decode {b}@{ctx}: graph {r['graph']['median_s'] * 1e3:.2f} ms"
                    f", eager {r['eager']['median_s'] * 1e3:.2f} ms")
    del m
    gc.collect()
    torch.cuda.empty_cache()
    run.write()


def steps_section(run):
    for name, plan in FAMILY_STEPS.items():
        step_rows(run, "steps", name, plan,
                  lambda cfg, p=plan: FamilyLlama(cfg, p["max_batch"], max_seq_of(p)), {})


def fused_section(run):
    for name, plan in FUSED_STEPS.items():
        step_rows(run, "fused_steps", name, plan,
                  lambda cfg, p=plan: FamilyLlama(cfg, p["max_batch"], max_seq_of(p), fused=True),
                  {"layout": "fused_qkv_gate_up"})
        step_rows(run, "steps", name, plan,
                  lambda cfg, p=plan: PlainLlama(cfg, p["max_batch"], max_seq_of(p)),
                  {"control": True})


def launch_section(run, key="launch"):
    st = run.case({"section": key}, launch_costs)
    if st is not None:
        run.doc[key] = st


SECTIONS = (("launch", launch_section), ("linear", linear_section), ("silu", silu_section),
            ("rope", rope_section), ("softmax", softmax_section), ("steps", steps_section),
            ("fused", fused_section),
            ("launch_after_steps", lambda run: launch_section(run, "launch_after_steps")),
            ("kernels", kernels_section))  # last: the profiler may leave CUPTI hooks behind


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("path", nargs="?",
                    default=os.path.join(os.environ.get("OUT", "."), "family_reference.json"))
    ap.add_argument("--only", default=",".join(name for name, _ in SECTIONS),
                    help="comma-separated sections to run")
    ap.add_argument("--budget-s", type=float, default=450.0,
                    help="skip the remaining cases past this many seconds")
    args = ap.parse_args()
    only = set(args.only.split(","))
    unknown = only - {name for name, _ in SECTIONS}
    if unknown:
        sys.exit(f"error: unknown sections {sorted(unknown)}; known: "
                 + ", ".join(name for name, _ in SECTIONS))
    torch.manual_seed(0)
    run = Run(args.path, args.budget_s)
    log(f"{run.doc['device']['name']}, torch {torch.__version__}; writing {args.path}")
    run.write()  # fails now, not after minutes of measuring, if the path cannot be written
    with torch.no_grad():
        for name, fn in SECTIONS:
            if name not in only:
                continue
            t0 = time.time()
            fn(run)
            log(f"section {name}: {time.time() - t0:.1f} s")
            run.write()
    run.write()
    d = run.doc
    log(f"done: {len(d['ops'])} ops, {len(d['ops_pending'])} pending ops, {len(d['steps'])} "
        f"steps, {len(d['fused_steps'])} fused steps, {len(d['failed'])} failed, "
        f"{len(d['skipped'])} skipped; elapsed {d['elapsed_s']:.1f} s")


if __name__ == "__main__":
    main()
