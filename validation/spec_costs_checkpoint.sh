#!/usr/bin/env bash
# Whether a transformers checkpoint verifies as fast as the same shape from a config (issue 37:
# the trained 174M target's 5-token verification took 0.540 ms in MEASUREMENTS §43, the random
# config's 0.457 ms in §46): saves LlamaForCausalLM at validation/configs/small-llama-target-12l.json's
# shape (random init, bf16, save_pretrained; max_position_embeddings 1024 and the tokenizer-free
# config the training script writes) and times `bench --speculative ngram,k=K` (K = 1 and 4) on the
# checkpoint and on the config, in that order, twice.
#   bash validation/spec_costs_checkpoint.sh [BIN_DIR]      results under $OUT/spec_ckpt
set -u
cd "$(dirname "$0")/.." || exit 2
bin=${1:-build/gpurun}
out=${OUT:-/tmp/spec_ckpt_out}/spec_ckpt
mkdir -p "$out"
# shellcheck source=gpu_common.sh
source validation/gpu_common.sh
gpu_env "$bin"
[ -x "$bin/inferlab" ] || { echo "spec_costs_checkpoint.sh: error: no $bin/inferlab" >&2; exit 2; }
nvidia-smi -L >/dev/null 2>&1 || { echo "spec_costs_checkpoint.sh: error: no GPU" >&2; exit 2; }
ckpt=$(mktemp -d)
trap 'rm -rf "$ckpt"' EXIT
python3 - "$ckpt" <<'PY' >"$out/save.log" 2>&1
import sys, torch
from transformers import LlamaConfig, LlamaForCausalLM
torch.manual_seed(0)
config = LlamaConfig(vocab_size=128256, hidden_size=768, intermediate_size=2048,
                     num_attention_heads=12, num_key_value_heads=4, head_dim=64,
                     max_position_embeddings=1024, rope_theta=500000.0, rms_norm_eps=1e-5,
                     tie_word_embeddings=True, bos_token_id=128000, eos_token_id=128001,
                     num_hidden_layers=12)
LlamaForCausalLM(config).to(torch.bfloat16).save_pretrained(sys.argv[1])
print(open(sys.argv[1] + "/config.json").read())
PY
echo "save exit $?" >>"$out/save.log"
ls -la "$ckpt" >>"$out/save.log"
for round in 1 2; do
  for k in 1 4; do
    for which in checkpoint config; do
      model=$ckpt
      [ $which = config ] && model=validation/configs/small-llama-target-12l.json
      timeout 90 "$bin/inferlab" bench --model "$model" --device cuda --input 264 --repeats 30 \
        --cuda-graphs on --speculative "ngram,k=$k" --format json \
        >"$out/${which}_k${k}_r$round.json" 2>"$out/${which}_k${k}_r$round.err"
      echo "$which k=$k round $round exit $?" >>"$out/progress.txt"
    done
  done
done
python3 - "$out" <<'PY' | tee "$out/summary.txt"
import glob, json, os, sys
for path in sorted(glob.glob(os.path.join(sys.argv[1], "*_k*_r*.json"))):
    try:
        d = json.load(open(path))
        print(os.path.basename(path), "decode %.4f verify %.4f ms" % (
            d["decode_step"]["median_ms"], d["verify"]["median_ms"]))
    except (OSError, ValueError, KeyError) as err:
        print(os.path.basename(path), "no result:", err)
PY
