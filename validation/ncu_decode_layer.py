#!/usr/bin/env python3
"""Per-kernel medians of an eager decode step's kernels from Nsight Compute's text output
(issue 38: where a quantized decode step's time goes, MEASUREMENTS §56).

On the device (one layer's kernels a few times over, past the prefill; caches flushed by ncu,
clocks left alone, no PDL overlap since each kernel is replayed alone):
  ncu --clock-control none --launch-skip 1200 --launch-count 24 \\
      --metrics gpu__time_duration.sum,dram__bytes_read.sum,launch__registers_per_thread \\
      build/gpurun/inferlab bench --model llama-3-8b --device cuda --weights int4 --batch 1 \\
      --input 128 --output 8 --repeats 1 --warmup 0 --no-kernels --cuda-graphs off \\
      --gpu-memory-utilization 0.25 > ncu_layer_int4.txt
Then, anywhere:
  python3 validation/ncu_decode_layer.py ncu_layer_int4.txt [--format json]

The streaming GEMV's launches are named by their epilogue (gemv_stream_kernel<F, B, E>: E 0
store, 1 residual add, 2 SwiGLU, 3 RoPE and the KV write): a store or a RoPE epilogue is the QKV
projection (RMSNorm fused; RoPE in its epilogue since MEASUREMENTS §58), SwiGLU the gate/up
projection; a residual add is the down projection where the GEMV launched next is a QKV (the
next layer's) or the one before it was a gate/up, else the O projection. Other kernels
keep their names. Prints, per name, the launches seen, the median duration (µs) with its range,
the median DRAM bytes read (MB) and registers per thread.
"""
import json
import re
import statistics
import sys

HEADER = re.compile(r"^\s\s(\S.*?)\s\(\d+, \d+, \d+\)x\(\d+, \d+, \d+\)")
GEMV = re.compile(r"gemv_stream_kernel<\d+, \d+, (\d+)")
SCALE = {"ns": 1e-3, "us": 1.0, "usecond": 1.0, "ms": 1e3, "msecond": 1e3,
         "byte": 1e-6, "Kbyte": 1e-3, "Mbyte": 1.0, "Gbyte": 1e3}


def parse(text):
    """The profiled kernels in launch order: (name, {metric: value in µs, MB or count})."""
    kernels = []
    for line in text.splitlines():
        header = HEADER.match(line)
        if header:
            kernels.append((header.group(1), {}))
            continue
        parts = line.split()
        if kernels and len(parts) >= 2 and "__" in parts[0]:
            unit = parts[1] if len(parts) >= 3 else ""
            value = float(parts[-1].replace(",", ""))
            kernels[-1][1][parts[0]] = value * SCALE.get(unit, 1.0)
    return kernels


def label(kernels):
    """Each kernel's name: the GEMV's projection (module docstring's rule), else its own."""
    epilogues = [int(GEMV.search(name).group(1)) if GEMV.search(name) else None
                 for name, _ in kernels]
    gemvs = [i for i, e in enumerate(epilogues) if e is not None]
    names = []
    for i, (name, _) in enumerate(kernels):
        e = epilogues[i]
        if e is None:
            names.append(re.sub(r"\(.*$", "", name).split("::")[-1].split("<")[0])
        elif e in (0, 3):
            names.append("qkv")
        elif e == 2:
            names.append("gate_up")
        else:
            at = gemvs.index(i)
            after = epilogues[gemvs[at + 1]] if at + 1 < len(gemvs) else None
            before = epilogues[gemvs[at - 1]] if at > 0 else None
            names.append("down" if after in (0, 3) or before == 2 else "o")
    return names


def summarize(kernels):
    rows = {}
    for name, (_, metrics) in zip(label(kernels), kernels):
        rows.setdefault(name, []).append(metrics)
    out = []
    for name, samples in rows.items():
        times = [m["gpu__time_duration.sum"] for m in samples if "gpu__time_duration.sum" in m]
        dram = [m["dram__bytes_read.sum"] for m in samples if "dram__bytes_read.sum" in m]
        regs = [m["launch__registers_per_thread"] for m in samples
                if "launch__registers_per_thread" in m]
        out.append({"kernel": name, "launches": len(samples),
                    "median_us": statistics.median(times) if times else None,
                    "min_us": min(times) if times else None,
                    "max_us": max(times) if times else None,
                    "dram_mb": statistics.median(dram) if dram else None,
                    "registers": max(regs) if regs else None})
    return out


def main(argv):
    if len(argv) < 2 or argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if len(argv) >= 2 else 2
    try:
        with open(argv[1], encoding="utf-8") as f:
            kernels = parse(f.read())
    except OSError as e:
        print(f"ncu_decode_layer.py: error: {e}", file=sys.stderr)
        return 2
    if not kernels:
        print(f"ncu_decode_layer.py: error: no profiled kernels in {argv[1]}", file=sys.stderr)
        return 2
    rows = summarize(kernels)
    if "--format" in argv and argv[argv.index("--format") + 1:][:1] == ["json"]:
        print(json.dumps(rows, indent=1))
        return 0
    print(f"{'kernel':<16}{'launches':>9}{'median µs':>11}{'range µs':>16}{'DRAM MB':>10}{'regs':>6}")
    for r in rows:
        t = f"{r['median_us']:.2f}" if r["median_us"] is not None else "-"
        span = (f"{r['min_us']:.2f}-{r['max_us']:.2f}" if r["min_us"] is not None else "-")
        d = f"{r['dram_mb']:.2f}" if r["dram_mb"] is not None else "-"
        g = f"{r['registers']:.0f}" if r["registers"] is not None else "-"
        print(f"{r['kernel']:<16}{r['launches']:>9}{t:>11}{span:>16}{d:>10}{g:>6}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
