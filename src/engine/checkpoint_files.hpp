#pragma once
// The files beside a checkpoint's weights, shared by the commands that write checkpoints
// (init-weights, quantize).
#include <filesystem>
#include <nlohmann/json.hpp>

#include "engine/llama_config.hpp"

namespace inferlab::engine {

// Creates `folder` (InputError when it cannot be) and removes the model*.safetensors* files of
// an earlier run, which would shadow or mix with new ones.
void prepare_checkpoint_folder(const std::filesystem::path& folder, const char* command);

// Writes `value` as indented JSON (std::runtime_error when the write fails).
void write_json_file(const std::filesystem::path& path, const nlohmann::json& value);

// Copies `source` to `target` (InputError naming `what` when the source does not exist).
void copy_into(const std::filesystem::path& source, const std::filesystem::path& target,
               const char* what);

// generation_config.json with the config's bos/eos/pad ids; returns its path.
std::filesystem::path write_generation_config(const std::filesystem::path& folder,
                                              const LlamaConfig& config);

}  // namespace inferlab::engine
