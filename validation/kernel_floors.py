#!/usr/bin/env python3
"""Per-kernel fixed cost of PyTorch's kernels inside a CUDA graph, by kind.

A tile-level simulator prices the work of a kernel from the hardware; what the library's
kernel costs beyond that work (its launch in the graph, prologue, pipeline fill, epilogue,
the gap before the next kernel) is a property of the kernel, measured here the way
LLMCompass measures its per-operator overheads: the same PyTorch call at a tiny shape,
captured CALLS times back to back in one CUDA graph (each call on its own buffers), the
replay timed with CUDA events, divided by CALLS.

Also measured, to check the simulator against and never fitted to: the same in-graph
per-call time at the real decode shapes of the shipped Llamas (GEMVs with weights that do not
stay in L2, RMSNorm rows of growing length, decode attention at growing context).

Usage on the device: python3 validation/kernel_floors.py $OUT/kernel_floors.json [--only-rope]
"""
import json
import os
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_reference import BF16, DEV, PlainLlama, capture_graph, rand, time_op  # noqa: E402

CALLS = 64
L2_BYTES = 50 * 1024 * 1024


def per_call(make_call, calls=CALLS, repeats=20):
    """Median in-graph time of one call: `calls` calls from make_call(i) in one graph."""
    fns = [make_call(i) for i in range(calls)]
    with torch.no_grad():
        g = capture_graph(lambda: [f() for f in fns])
        r = time_op(g.replay, repeats=repeats, warmup=3, flush=False)
    del g
    return r["median_s"] / calls


def calls_for(bytes_per_call):
    """Enough calls that their operands together are 8x L2: nothing is reused from L2."""
    return max(4, min(CALLS, int(8 * L2_BYTES / max(1, bytes_per_call)) + 1))


def linear_case(m, n, k):
    bytes_per_call = 2 * (m * k + n * k + m * n)
    calls = calls_for(bytes_per_call)
    xs = [rand(m, k) for _ in range(calls)]
    ws = [rand(n, k) * 0.02 for _ in range(calls)]
    t = per_call(lambda i: (lambda: F.linear(xs[i], ws[i])), calls)
    del xs, ws
    return dict(kind="linear", m=m, n=n, k=k, calls=calls, bytes=bytes_per_call, per_call_s=t)


def rms_norm_case(rows, hidden):
    calls = calls_for(3 * rows * hidden * 2)
    xs = [rand(rows, hidden) for _ in range(calls)]
    w = torch.ones(hidden, device=DEV, dtype=BF16)
    t = per_call(lambda i: (lambda: F.rms_norm(xs[i], (hidden,), w, 1e-5)), calls)
    return dict(kind="rms_norm", rows=rows, hidden=hidden, calls=calls, per_call_s=t)


def elementwise_case(name, fn, elements):
    xs = [rand(elements) for _ in range(CALLS)]
    ys = [rand(elements) for _ in range(CALLS)]
    t = per_call(lambda i: (lambda: fn(xs[i], ys[i])))
    return dict(kind=name, elements=elements, calls=CALLS, per_call_s=t)


def attention_case(batch, q_heads, kv_heads, q_len, kv_len, head_dim=128):
    per_call_bytes = 2 * batch * head_dim * (2 * q_heads * q_len + 2 * kv_heads * kv_len)
    calls = calls_for(per_call_bytes)
    qs = [rand(batch, q_heads, q_len, head_dim) for _ in range(calls)]
    ks = [rand(batch, kv_heads, kv_len, head_dim) for _ in range(calls)]
    vs = [rand(batch, kv_heads, kv_len, head_dim) for _ in range(calls)]
    causal = q_len > 1
    t = per_call(lambda i: (lambda: F.scaled_dot_product_attention(
        qs[i], ks[i], vs[i], is_causal=causal, enable_gqa=True)), calls)
    return dict(kind="attention_prefill" if causal else "attention_decode", batch=batch,
                q_heads=q_heads, kv_heads=kv_heads, q_len=q_len, kv_len=kv_len,
                head_dim=head_dim, calls=calls, per_call_s=t)


def rope_case(batch, tokens, heads, kv_heads, head_dim):
    """PlainLlama's RoPE on the transposed q and k views (10 kernels)."""
    calls = calls_for(2 * 2 * batch * tokens * (heads + kv_heads) * head_dim)
    qs = [rand(batch, tokens, heads * head_dim) for _ in range(calls)]
    ks = [rand(batch, tokens, kv_heads * head_dim) for _ in range(calls)]
    cos, sin = rand(1, 1, tokens, head_dim), rand(1, 1, tokens, head_dim)

    def call(i):
        q = qs[i].view(batch, tokens, heads, head_dim).transpose(1, 2)
        k = ks[i].view(batch, tokens, kv_heads, head_dim).transpose(1, 2)
        return lambda: (PlainLlama.rope(q, cos, sin), PlainLlama.rope(k, cos, sin))
    t = per_call(call, calls)
    return dict(kind="rope", batch=batch, tokens=tokens, heads=heads, kv_heads=kv_heads,
                head_dim=head_dim, calls=calls, per_call_s=t)


def measure_floors(floors):
    """The smallest shapes each kind is run at."""
    for m, n, k in [(1, 64, 64), (1, 256, 256), (16, 256, 256), (1, 512, 512), (64, 512, 512)]:
        floors.append(linear_case(m, n, k))
    for hidden in (64, 256):
        floors.append(rms_norm_case(1, hidden))
    floors.append(elementwise_case("add", torch.add, 64))
    floors.append(elementwise_case("mul", torch.mul, 64))
    floors.append(elementwise_case("silu_mul", lambda x, y: F.silu(x) * y, 64))
    floors.append(attention_case(1, 32, 8, 1, 16))
    floors.append(attention_case(1, 32, 8, 16, 16))


def measure_shapes(shapes):
    """Real decode shapes, to check the simulator against."""
    for n, k in [(2048, 2048), (512, 2048), (8192, 2048), (2048, 8192), (4096, 4096),
                 (1024, 4096), (14336, 4096), (4096, 14336), (128256, 4096)]:
        for m in (1, 16):
            shapes.append(linear_case(m, n, k))
    for rows in (1, 8, 32, 128):
        for hidden in (1024, 2048, 3072, 4096, 8192):
            shapes.append(rms_norm_case(rows, hidden))
    for batch, ctx in [(1, 512), (1, 2048), (8, 1024), (32, 1024), (64, 2048)]:
        shapes.append(attention_case(batch, 32, 8, 1, ctx))


def measure_rope(shapes):
    for heads, kv_heads, d in ((32, 8, 64), (24, 8, 128), (32, 8, 128)):
        for batch, tokens in ((1, 1), (1, 128), (1, 512), (1, 2048), (4, 1024)):
            shapes.append(rope_case(batch, tokens, heads, kv_heads, d))


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else "kernel_floors.json"
    out = {"torch": torch.__version__, "device": torch.cuda.get_device_name(0),
           "cuda": torch.version.cuda,
           "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "method": f"{CALLS} calls (fewer when their operands exceed 8x L2) back to back in one "
                     "CUDA graph, each on its own buffers; replay timed with CUDA events, median "
                     "of 20 replays, divided by the calls",
           "floors": [], "shapes": []}
    if "--only-rope" not in sys.argv:
        measure_floors(out["floors"])
        measure_shapes(out["shapes"])
    measure_rope(out["shapes"])
    for r in out["floors"] + out["shapes"]:
        print({k: (round(v * 1e6, 2) if k == "per_call_s" else v) for k, v in r.items()})
    with open(path, "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
