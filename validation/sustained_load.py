#!/usr/bin/env python3
"""sustained_clock.py's measurement, made safe for any machine (the H200 above all), with what
the H200's prefill gap needs besides.

sustained_clock.py itself runs on any single-GPU machine. This variant:
  * samples only the GPU torch runs on (nvidia-smi -i, matched by UUID): on a machine with
    several GPUs, sustained_clock.py's nvidia-smi reports every GPU and the idle ones' clocks
    and power enter its medians;
  * records the board's limits once (power limit, enforced limit, max and application clocks;
    `nvidia-smi -q -d POWER,CLOCK,PERFORMANCE` as text), and per sample the temperature, the
    memory clock and, where the driver knows the field, the active clock-event (throttle)
    reasons, so a clock drop can be told from a power cap (0x4), a thermal slowdown or an
    application-clock setting;
  * keeps sustained_clock.py's runs first, in its order and form (idle; gemm_alone then
    gemm_back_to_back for 2048x14336x4096 and 8192^3), so `inferlab fit --sustained FILE`
    reads this file as it reads sustained_clock.py's;
  * then one more GEMM pair (a Llama 3 8B gate/up-fused prefill GEMM, 4096x28672x4096), and
    for the prefill steps the reference data holds (Llama 3 8B prefill 512, 2048 and 4x1024,
    Llama 3.2 1B prefill 8x1024; Llama 3 8B decode 1x512 as the memory-bound contrast):
    "step_reference_cool": the step timed as torch_reference.time_step times its graph (2
    warm-up + 15 replays, median) after the GPU rested 3 s; "step_back_to_back": 8 s of
    replays back to back, each timed (first tenth, last tenth, median, clock and power);
    "step_reference_hot": time_step's way again right after. The cool one is what the
    reference files hold; the back-to-back one is what a served prefill sees.

Usage on the device (about 2.5 minutes):
  python3 validation/sustained_load.py $OUT/sustained_load.json
Progress goes to stderr; the JSON is written after every run.
"""
import json
import os
import statistics
import subprocess
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sustained_clock import gemm_alone, gemm_back_to_back, replays_back_to_back  # noqa: E402
from torch_reference import DEV, PlainLlama, capture_graph, load_config, time_op  # noqa: E402

T0 = time.time()
SAMPLE_FIELDS = ["timestamp", "clocks.sm", "power.draw", "temperature.gpu", "clocks.mem"]
REASON_FIELDS = ("clocks_event_reasons.active", "clocks_throttle_reasons.active")
LIMIT_FIELDS = ("power.limit", "enforced.power.limit", "power.max_limit", "clocks.max.sm",
                "clocks.applications.graphics", "clocks.default_applications.graphics")


def log(msg):
    print(f"[{time.time() - T0:7.1f} s] {msg}", file=sys.stderr, flush=True)


def smi(*args, timeout=30):
    """(return code, stdout + stderr) of nvidia-smi, never raising."""
    try:
        p = subprocess.run(["nvidia-smi", *args], capture_output=True, text=True,
                           timeout=timeout)
        return p.returncode, (p.stdout + p.stderr).strip()
    except Exception as e:  # noqa: BLE001
        return -1, repr(e)


def smi_index():
    """nvidia-smi's index of torch's device 0 (matched by UUID, else CUDA_VISIBLE_DEVICES)."""
    try:
        uuid = str(torch.cuda.get_device_properties(0).uuid).lower()
    except Exception:  # noqa: BLE001
        uuid = ""
    rc, out = smi("--query-gpu=index,uuid", "--format=csv,noheader")
    if rc == 0 and uuid:
        for line in out.splitlines():
            parts = [p.strip() for p in line.split(",")]
            if len(parts) == 2 and uuid.replace("gpu-", "") in parts[1].lower():
                return parts[0]
    first = os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",")[0].strip()
    return first if first.isdigit() else "0"


def field_works(index, field):
    rc, _ = smi("-i", index, f"--query-gpu={field}", "--format=csv,noheader")
    return rc == 0


class Sampler:
    """nvidia-smi on one GPU in the background: SAMPLE_FIELDS (+ reasons) every 20 ms."""

    def __init__(self, index, fields):
        self.index, self.fields = index, fields

    def __enter__(self):
        try:
            self.proc = subprocess.Popen(
                ["nvidia-smi", "-i", self.index, "--query-gpu=" + ",".join(self.fields),
                 "--format=csv,noheader,nounits", "-lms", "20"],
                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        except OSError as e:
            log(f"no nvidia-smi sampling: {e!r}")
            self.proc = None
        time.sleep(0.3)
        return self

    def __exit__(self, *exc):
        self.rows = []
        if self.proc is None:
            return
        time.sleep(0.1)
        self.proc.terminate()
        out, _ = self.proc.communicate()
        for line in out.splitlines():
            parts = [p.strip() for p in line.split(",")]
            if len(parts) == len(self.fields):
                self.rows.append(dict(zip(self.fields, parts)))


def numbers(rows, field):
    out = []
    for r in rows:
        try:
            out.append(float(r[field]))
        except (KeyError, ValueError):
            pass
    return out


def sampled(ctx, label, fn):
    """fn() under a sampler: its result with clock, power, temperature and reasons (the
    fields sustained_clock.sampled() gives, same names, and more)."""
    with Sampler(ctx["index"], ctx["fields"]) as s:
        result = fn()
    mhz, watts = numbers(s.rows, "clocks.sm"), numbers(s.rows, "power.draw")
    temp, mem = numbers(s.rows, "temperature.gpu"), numbers(s.rows, "clocks.mem")
    out = dict(label=label, result=result, samples=len(mhz),
               sm_mhz_median=statistics.median(mhz) if mhz else None,
               sm_mhz_min=min(mhz) if mhz else None,
               power_w_median=statistics.median(watts) if watts else None,
               power_w_max=max(watts) if watts else None,
               temperature_c_max=max(temp) if temp else None,
               mem_mhz_median=statistics.median(mem) if mem else None)
    if ctx["reason_field"]:
        reasons = {}
        for r in s.rows:
            key = r.get(ctx["reason_field"], "?")
            reasons[key] = reasons.get(key, 0) + 1
        out["clock_event_reasons"] = reasons  # bit mask -> samples; 0x4: software power cap
    step = max(1, len(mhz) // 100)  # about 100 points of the SM clock over the run
    out["sm_mhz_series"] = mhz[::step]
    return out


def step_reference(g):
    """The graph replayed as torch_reference.time_step times it."""
    return time_op(g.replay, repeats=15, warmup=2, flush=False)


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else "sustained_load.json"
    index = smi_index()
    reason_field = next((f for f in REASON_FIELDS if field_works(index, f)), None)
    limits = {f: smi("-i", index, f"--query-gpu={f}", "--format=csv,noheader")[1]
              for f in LIMIT_FIELDS}
    ctx = dict(index=index, reason_field=reason_field,
               fields=SAMPLE_FIELDS + ([reason_field] if reason_field else []))
    out = {"torch": torch.__version__, "device": torch.cuda.get_device_name(0),
           "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "script": "validation/sustained_load.py", "nvidia_smi_index": index,
           "limits": limits,
           "nvidia_smi_q": smi("-i", index, "-q", "-d", "POWER,CLOCK,PERFORMANCE")[1][:20000],
           "runs": []}
    runs = out["runs"]

    def write():
        out["elapsed_s"] = time.time() - T0
        with open(path, "w") as f:
            json.dump(out, f, indent=1)

    def add(run):
        runs.append(run)
        log(f"{run['label']}: {run['sm_mhz_median']} MHz, {run['power_w_median']} W")
        write()

    log(f"{out['device']}: nvidia-smi GPU {index}, reasons field {reason_field}; limits {limits}")
    write()
    with torch.no_grad():
        add(sampled(ctx, "idle", lambda: time.sleep(1.0)))
        # sustained_clock.py's pairs first, same order: fit --sustained takes the first pair
        # whose alone run kept the idle clock.
        for shape in [(2048, 14336, 4096), (8192, 8192, 8192), (4096, 28672, 4096)]:
            add(sampled(ctx, "gemm_alone", lambda: gemm_alone(*shape)))
            add(sampled(ctx, "gemm_back_to_back", lambda: gemm_back_to_back(*shape)))
            time.sleep(2.0)  # let it cool down before the next measurement
        for name, max_batch, points in [
                ("llama-3-8b", 4, [("prefill", 1, 2048, 8.0), ("prefill", 1, 512, 4.0),
                                   ("prefill", 4, 1024, 8.0), ("decode", 1, 512, 4.0)]),
                ("llama-3.2-1b", 8, [("prefill", 8, 1024, 4.0)])]:
            cfg = load_config(name)
            model = PlainLlama(cfg, max_batch=max_batch, max_seq=2048 + 8)
            for phase, b, n, seconds in points:
                s = n if phase == "prefill" else 1
                tokens = torch.randint(0, cfg["vocab_size"], (b, s), device=DEV)
                pos = (torch.arange(n, device=DEV) if phase == "prefill"
                       else torch.tensor([n - 1], device=DEV))
                g = capture_graph(lambda: model(tokens, pos, n))
                tag = dict(model=name, phase=phase, batch=b,
                           **({"tokens": n} if phase == "prefill" else {"context": n}))
                time.sleep(3.0)
                r = sampled(ctx, f"{name} {phase} {b}x{n} step_reference_cool",
                            lambda: step_reference(g))
                add(dict(r, kind="step_reference_cool", **tag))
                r = sampled(ctx, f"{name} {phase} {b}x{n} replays",
                            lambda: replays_back_to_back(g, seconds))
                add(dict(r, kind="step_back_to_back", **tag))
                r = sampled(ctx, f"{name} {phase} {b}x{n} step_reference_hot",
                            lambda: step_reference(g))
                add(dict(r, kind="step_reference_hot", **tag))
                del g
            del model
            torch.cuda.empty_cache()
    write()
    log(f"done: {len(runs)} runs; elapsed {out['elapsed_s']:.1f} s")


if __name__ == "__main__":
    main()
