#pragma once
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <functional>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string>

#include "engine/init_weights.hpp"
#include "engine/llama_config.hpp"
#include "engine/llama_weights.hpp"
#include "util/error.hpp"

namespace inferlab::engine::testing {

// A fresh folder under the temp directory, removed at the end of the test.
class ScratchDir {
 public:
  explicit ScratchDir(const std::string& tag) {
    static std::atomic<int> counter{0};
    path_ = std::filesystem::temp_directory_path() /
            ("inferlab_engine_" + tag + "_" + std::to_string(::getpid()) + "_" +
             std::to_string(counter++));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~ScratchDir() {
    std::error_code error;
    std::filesystem::remove_all(path_, error);
  }
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

// Expects `body` to throw InputError whose message holds every one of `parts`.
inline void expect_input_error(const std::function<void()>& body,
                               std::initializer_list<std::string> parts) {
  try {
    body();
    ADD_FAILURE() << "no InputError thrown";
  } catch (const InputError& error) {
    const std::string message = error.what();
    for (const auto& part : parts) {
      EXPECT_NE(message.find(part), std::string::npos)
          << "'" << part << "' not in the message: " << message;
    }
  }
}

// A tiny Llama 3 shaped config.json: 2 layers, hidden 64, 4 heads of 16, 2 KV heads, vocab 256,
// llama3 rope scaling, tied embeddings.
inline nlohmann::json tiny_llama_config_json() {
  return {{"architectures", {"LlamaForCausalLM"}},
          {"model_type", "llama"},
          {"hidden_size", 64},
          {"intermediate_size", 128},
          {"num_hidden_layers", 2},
          {"num_attention_heads", 4},
          {"num_key_value_heads", 2},
          {"head_dim", 16},
          {"vocab_size", 256},
          {"max_position_embeddings", 512},
          {"rms_norm_eps", 1e-5},
          {"rope_theta", 500000.0},
          {"rope_scaling",
           {{"rope_type", "llama3"},
            {"factor", 32.0},
            {"low_freq_factor", 1.0},
            {"high_freq_factor", 4.0},
            {"original_max_position_embeddings", 64}}},
          {"hidden_act", "silu"},
          {"tie_word_embeddings", true},
          {"bos_token_id", 1},
          {"eos_token_id", 2},
          {"torch_dtype", "bfloat16"}};
}

// The Qwen2 flavour: QKV bias, untied LM head, plain rope_theta.
inline nlohmann::json tiny_qwen_config_json() {
  auto config = tiny_llama_config_json();
  config["architectures"] = {"Qwen2ForCausalLM"};
  config["model_type"] = "qwen2";
  config.erase("rope_scaling");
  config["rope_theta"] = 1000000.0;
  config["tie_word_embeddings"] = false;
  config["rms_norm_eps"] = 1e-6;
  return config;
}

// A model of `config_json` with random weights drawn from `seed` (init-weights' values).
inline LlamaModel tiny_model(const nlohmann::json& config_json, uint64_t seed) {
  LlamaModel model;
  model.config = parse_llama_config(config_json, "tiny", "tiny config");
  model.weights = random_llama_weights(model.config, seed);
  return model;
}

}  // namespace inferlab::engine::testing
