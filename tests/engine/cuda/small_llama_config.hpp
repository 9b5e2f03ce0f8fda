#pragma once
// The small Llama the CUDA backend tests run (3 layers of 256, 4 query heads and 2 KV heads of
// 64), as config.json would give it; tests change what they need (vocabulary, RoPE, Qwen).
#include <cstdint>
#include <nlohmann/json.hpp>

namespace inferlab::engine {

inline nlohmann::json small_llama_json(int64_t vocab_size = 1000) {
  return {{"architectures", {"LlamaForCausalLM"}},
          {"model_type", "llama"},
          {"hidden_size", 256},
          {"intermediate_size", 512},
          {"num_hidden_layers", 3},
          {"num_attention_heads", 4},
          {"num_key_value_heads", 2},
          {"head_dim", 64},
          {"vocab_size", vocab_size},
          {"max_position_embeddings", 4096},
          {"rms_norm_eps", 1e-5},
          {"rope_theta", 500000.0},
          {"tie_word_embeddings", false},
          {"torch_dtype", "bfloat16"}};
}

}  // namespace inferlab::engine
