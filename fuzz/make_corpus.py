#!/usr/bin/env python3
"""Writes the seed corpora of fuzz/corpus/<target>/ from the repository's own files: small real
examples, large ones trimmed (a few rows of each kind) so that libFuzzer's inputs stay small.
Run from the repository root; the output is committed. Findings are added by hand, named
after the regression test that covers them."""
import json
import os
import shutil
import struct

C = "fuzz/corpus"


def put(target, name, data):
    os.makedirs(f"{C}/{target}", exist_ok=True)
    mode = "wb" if isinstance(data, bytes) else "w"
    with open(f"{C}/{target}/{name}", mode) as f:
        f.write(data)


def copy(target, path, name=None):
    os.makedirs(f"{C}/{target}", exist_ok=True)
    shutil.copy(path, f"{C}/{target}/{name or os.path.basename(path)}")


def load(path):
    with open(path) as f:
        return json.load(f)


def few_of_each(rows, key, n=1):
    seen, out = {}, []
    for row in rows:
        k = row.get(key) if isinstance(row, dict) else None
        if seen.get(k, 0) < n:
            seen[k] = seen.get(k, 0) + 1
            out.append(row)
    return out


def drop_lists(o):
    """Long lists (memory sweeps over sizes) down to their first two entries."""
    if isinstance(o, dict):
        return {k: drop_lists(v) for k, v in o.items()}
    if isinstance(o, list):
        return [drop_lists(v) for v in o[:2]]
    return o


def trimmed_profile(path):
    p = load(path)
    p["memory"] = drop_lists(p["memory"])
    for name in ("gemm", "llm_kernels"):
        rows = p.get("sweeps", {}).get(name, [])
        p["sweeps"][name] = few_of_each(rows, "kernel" if name == "llm_kernels" else "model", 1)
    return json.dumps(p)


# config.json: the shipped model configs and the tiny HF checkpoints' configs.
for f in sorted(os.listdir("data/models")):
    copy("config_json", f"data/models/{f}")
for m in ("llama", "mistral", "qwen"):
    copy("config_json", f"tests/engine/data/hf_tiny_{m}/config.json", f"hf_tiny_{m}.json")

for f in sorted(os.listdir("data/hardware")):
    copy("hardware_sheet", f"data/hardware/{f}")
# Templates: the parser sees a document after its base chain was merged; the ones without a
# base are complete.
for f in sorted(os.listdir("data/templates")):
    if "base" not in load(f"data/templates/{f}"):
        copy("hardware_template", f"data/templates/{f}")

for f in ("h100-sxm", "h200"):
    put("hardware_profile", f"{f}.json", trimmed_profile(f"data/profiles/{f}.json"))
    put("reference_data", f"profile_{f}.json", trimmed_profile(f"data/profiles/{f}.json"))
ref = load("validation/data/torch_reference_h100_2026-11-22b.json")
put("reference_data", "torch_reference_h100.json",
    json.dumps({"device": ref["device"], "ops": few_of_each(ref["ops"], "op", 2)}))

copy("engine_profile", "tests/fit/data/engine_profile_synthetic.json")
copy("engine_profile", "validation/data/engine_profile_h100_llama-3-8b_ablation_gemv_eager_2026-11-23.json",
     "engine_profile_h100_ablation.json")
copy("engine_profile", "validation/data/engine_costs_h100-sxm_2026-11-23.json", "engine_costs_h100.json")

put("trace", "trace.jsonl",
    '{"arrival_s": 0.0, "prompt_tokens": 512, "output_tokens": 128}\n'
    '{"arrival_s": 0.25, "prompt_tokens": 2048, "output_tokens": 64, "prefix_id": 1, '
    '"prefix_tokens": 1024}\n\n{"arrival_s": 1.5, "prompt_tokens": 1, "output_tokens": 1}\n')
put("trace", "trace.csv",
    "arrival_s,prompt_tokens,output_tokens,prefix_id,prefix_tokens\r\n"
    "0,512,128,,\r\n0.25,2048,64,1,1024\r\n1.5,1,1,-1,0\r\n")


def safetensors(tensors, metadata=None, pad=0):
    header, data = {}, b""
    for name, (dtype, shape, size) in tensors.items():
        header[name] = {"dtype": dtype, "shape": shape,
                        "data_offsets": [len(data), len(data) + size]}
        data += bytes(range(size % 256)) * (size // 256) + bytes(size % 256)
    if metadata:
        header["__metadata__"] = metadata
    text = json.dumps(header).encode() + b" " * pad
    return struct.pack("<Q", len(text)) + text + data


put("safetensors_header", "small.safetensors",
    safetensors({"a": ("BF16", [2, 3], 12), "b.weight": ("F32", [4], 16),
                 "q": ("I8", [2, 2, 2], 8), "s": ("U8", [], 1), "z": ("F16", [0, 5], 0),
                 "i": ("I32", [1], 4)}, {"format": "pt"}, pad=3))
real = open("tests/engine/data/hf_tiny_llama/model.safetensors", "rb").read()
n = struct.unpack("<Q", real[:8])[0]
put("safetensors_header", "hf_tiny_llama_header_only", real[:8 + n])  # data section cut off
put("safetensors_header", "hf_tiny_llama_truncated_header", real[:8 + n // 2])

put("checkpoint_index", "index.json", json.dumps(
    {"metadata": {"total_size": 1024},
     "weight_map": {"model.embed_tokens.weight": "model-00001-of-00002.safetensors",
                    "model.norm.weight": "model-00002-of-00002.safetensors",
                    "lm_head.weight": "model-00002-of-00002.safetensors"}}))

# fuzz/data/tiny_tokenizer.json is tests/engine/tokenizer_test.cpp's tiny_json() (256 byte
# tokens, a few merges, two added tokens, the Llama 3 split regex); a variant with the NFC
# normalizer, GPT-2's ByteLevel regex, a prefix space and ignore_merges covers the other paths.
# fuzz/data/tiny_nfc_tokenizer.json (written here) is the same with the NFC normalizer, GPT-2's
# ByteLevel regex and ignore_merges (Qwen's paths); both are also fuzz_tokenizer_text's tokenizers.
copy("tokenizer_json", "fuzz/data/tiny_tokenizer.json", "tiny.json")
tiny = load("fuzz/data/tiny_tokenizer.json")
tiny["normalizer"] = {"type": "NFC"}
tiny["pre_tokenizer"] = {"type": "ByteLevel", "add_prefix_space": False, "use_regex": True}
tiny["model"]["ignore_merges"] = True
with open("fuzz/data/tiny_nfc_tokenizer.json", "w") as f:
    f.write(json.dumps(tiny, ensure_ascii=False) + "\n")
copy("tokenizer_json", "fuzz/data/tiny_nfc_tokenizer.json", "tiny_nfc.json")
tiny["pre_tokenizer"]["add_prefix_space"] = True
put("tokenizer_json", "tiny_nfc_prefix_space.json", json.dumps(tiny, ensure_ascii=False))
put("tokenizer_text", "ascii.txt", "Hello world, hello!  It's 2026: 12345 tokens.\n\tx  y")
put("tokenizer_text", "unicode.txt",
    "naïve café 日本語のテキスト 🦙 Ελληνικά e\u0301 \ufb01 한국어 \u200b العربية")
put("tokenizer_text", "special.txt",
    "<|begin_of_text|><|eot|>hi<|im_start|>user\n<|bos|>x<|eot_id|>")
put("tokenizer_text", "invalid_utf8.bin", b"ok \xff\xfe \xc3 \xe6\x97 \xed\xa0\x80 \xf4\x90\x80\x80 end")
put("tokenizer_text", "ids.bin", struct.pack("<8i", 0, 1, 256, 259, 261, 128000, -1, 1 << 30))
