#pragma once
#include <cstdint>
#include <filesystem>
#include <string>

#include "engine/llama_weights.hpp"

namespace inferlab::cli {

// True when `model` names a checkpoint folder (config.json inside) rather than a shipped model.
bool is_checkpoint_folder(const std::string& model);

// The tokenizer a command uses: --tokenizer when given (tokenizer.json or its folder), else the
// checkpoint's own tokenizer.json, else the fetched Llama 3 tokenizer (shipped model names).
std::filesystem::path tokenizer_path(const std::string& model, const std::string& tokenizer);

// A checkpoint folder's weights, or random weights at a shipped model's real shapes (the
// values init-weights would write with this seed).
engine::LlamaModel load_engine_model(const std::string& model, uint64_t seed);

}  // namespace inferlab::cli
