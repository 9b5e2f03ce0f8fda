#!/usr/bin/env python3
"""Which kernels PyTorch launches for one step of the plain Llama in torch_reference.py.

Runs one prefill (batch 1, 512 tokens) and one decode step (batch 1, context 512) of Llama 3.2 1B
under torch.profiler and records every CUDA kernel (name, count) and the number of aten ops the
Python side dispatched, so `--framework pytorch`'s kernel list can be checked against it.

Usage on the device: python3 validation/kernel_list.py $OUT/kernel_list.json
"""
import collections
import json
import os
import sys
import time

import torch
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_reference import DEV, PlainLlama, load_config  # noqa: E402


def kernels_of(fn):
    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    kernels, aten = collections.Counter(), collections.Counter()
    for e in prof.events():
        if e.device_type == torch.autograd.DeviceType.CUDA:
            kernels[e.name] += 1
        elif e.name.startswith("aten::"):
            aten[e.name] += 1
    return kernels, aten


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else "kernel_list.json"
    cfg = load_config("llama-3.2-1b")
    model = PlainLlama(cfg, max_batch=1, max_seq=1024)
    out = {"model": "llama-3.2-1b", "layers": cfg["num_hidden_layers"], "torch": torch.__version__,
           "device": torch.cuda.get_device_name(0),
           "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    with torch.no_grad():
        for phase, tokens, pos, ctx in (
                ("prefill", torch.randint(0, 1000, (1, 512), device=DEV), torch.arange(512, device=DEV), 512),
                ("decode", torch.randint(0, 1000, (1, 1), device=DEV), torch.tensor([511], device=DEV), 512)):
            kernels, aten = kernels_of(lambda: model(tokens, pos, ctx))
            out[phase] = {"kernels_total": sum(kernels.values()),
                          "aten_ops_total": sum(aten.values()),
                          "kernels": dict(kernels.most_common()),
                          "aten_ops": dict(aten.most_common())}
            print(phase, "kernels", sum(kernels.values()), "aten ops", sum(aten.values()))
            for name, n in kernels.most_common(40):
                print(f"  {n:5d}  {name[:110]}")
    with open(path, "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
