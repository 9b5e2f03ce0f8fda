# Makes the hf_tiny_* fixtures: tiny Llama 3 (tied, llama3 rope scaling), Qwen2 (QKV bias) and
# Mistral (sliding window 8) models with random weights, saved by transformers, with the logits
# transformers computes for a 150-token sequence and its greedy continuation of the first 20.
# The engine's CPU reference must reproduce them (tests/engine/transformers_golden_test.cpp).
# Run where torch and transformers are installed (the GPU machine), then trim with the JSON step
# below: python3 make_hf_tiny.py OUT_DIR
import json, os, sys

import torch
import transformers as T

out = sys.argv[1]
torch.manual_seed(0)
base = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2, head_dim=16, vocab_size=256, max_position_embeddings=512,
            rms_norm_eps=1e-5, bos_token_id=1, eos_token_id=2)
llama3 = lambda original: dict(rope_type="llama3", factor=32.0, low_freq_factor=1.0,
                               high_freq_factor=4.0, original_max_position_embeddings=original)
cases = {
    "llama": dict(model_type="llama", rope_theta=5e5, rope_scaling=llama3(64), tie_word_embeddings=True),
    "qwen": dict(model_type="qwen2", rope_theta=1e6, tie_word_embeddings=False, rms_norm_eps=1e-6),
    "mistral": dict(model_type="mistral", rope_theta=5e5, sliding_window=8, tie_word_embeddings=False),
    # Larger, not committed: checked by hand (4 layers, hidden 256, GQA 8:2, vocab 1000).
    "deep": dict(model_type="llama", hidden_size=256, intermediate_size=512, num_hidden_layers=4,
                 num_attention_heads=8, head_dim=32, vocab_size=1000, rope_theta=5e5,
                 rope_scaling=llama3(256), tie_word_embeddings=False),
}
rows = [0, 1, 8, 9, 50, 99, 100, 149]
for name, change in cases.items():
    kwargs = dict(base)
    kwargs.update(change)
    model_type = kwargs.pop("model_type")
    config = T.AutoConfig.for_model(model_type, **kwargs)
    model = T.AutoModelForCausalLM.from_config(config).float().eval()
    with torch.no_grad():
        for param_name, p in model.named_parameters():
            if "norm" in param_name:
                p.copy_(1 + 0.1 * torch.randn_like(p))
            elif p.dim() == 1:
                p.normal_(0, 0.1)
            else:
                p.normal_(0, p.shape[-1] ** -0.5)
    folder = os.path.join(out, "hf_tiny_" + name)
    model.save_pretrained(folder)
    tokens = (torch.arange(150) * 37 + 11) % config.vocab_size
    with torch.no_grad():
        logits = model(tokens[None]).logits[0]
    greedy = model.generate(tokens[None, :20], max_new_tokens=32, min_new_tokens=32,
                            do_sample=False)[0, 20:].tolist()
    json.dump({"source": "make_hf_tiny.py, transformers " + T.__version__,
               "tokens": tokens.tolist(), "greedy_prompt_tokens": 20, "greedy": greedy,
               "logit_rows": rows,
               "logits": [[float("%.7g" % v) for v in logits[r].tolist()] for r in rows]},
              open(os.path.join(folder, "expected.json"), "w"))
