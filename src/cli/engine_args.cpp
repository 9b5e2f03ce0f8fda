#include "cli/engine_args.hpp"

#include "engine/init_weights.hpp"
#include "util/data_dir.hpp"
#include "util/error.hpp"

namespace inferlab::cli {

bool is_checkpoint_folder(const std::string& model) {
  std::error_code ec;
  return std::filesystem::is_regular_file(std::filesystem::path(model) / "config.json", ec);
}

std::filesystem::path tokenizer_path(const std::string& model, const std::string& tokenizer) {
  if (!tokenizer.empty()) return tokenizer;
  if (!model.empty() && is_checkpoint_folder(model)) {
    auto own = std::filesystem::path(model) / "tokenizer.json";
    std::error_code ec;
    if (std::filesystem::is_regular_file(own, ec)) return own;
    throw InputError("checkpoint '" + model + "' has no tokenizer.json; give --tokenizer FILE");
  }
  return fetched_tokenizer_dir("llama3") / "tokenizer.json";
}

engine::LlamaModel load_engine_model(const std::string& model, uint64_t seed) {
  if (is_checkpoint_folder(model)) return engine::load_llama_model(model);
  engine::LlamaConfig config = engine::load_llama_config(model);
  engine::LlamaWeights weights = engine::random_llama_weights(config, seed);
  return {std::move(config), std::move(weights)};
}

}  // namespace inferlab::cli
