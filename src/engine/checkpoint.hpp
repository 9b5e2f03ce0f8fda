#pragma once
#include <filesystem>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "engine/safetensors.hpp"

namespace inferlab::engine {

// The weights of a Hugging Face checkpoint folder: `model.safetensors`, or the shards that
// `model.safetensors.index.json` lists (its weight_map names each tensor's shard; every shard is
// mapped and checked, every tensor of the map must be in the shard it names, and every tensor of
// a shard must be in the map). Names are unique across shards.
class Checkpoint {
 public:
  // Throws InputError naming the folder or file at fault.
  static Checkpoint open(const std::filesystem::path& folder);

  // All tensors, by name.
  const std::map<std::string, TensorView>& tensors() const { return tensors_; }
  const TensorView* find(std::string_view name) const;
  const std::filesystem::path& folder() const { return folder_; }
  size_t shard_count() const { return files_.size(); }

 private:
  std::filesystem::path folder_;
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  std::map<std::string, TensorView> tensors_;
};

// The weight_map of model.safetensors.index.json: tensor names by shard file name. InputError
// naming `context` for anything but an object whose weight_map maps each tensor to a plain file
// name in the folder (nothing that climbs out), or an empty map.
std::map<std::string, std::set<std::string>> parse_checkpoint_index(const nlohmann::json& index,
                                                                    const std::string& context);

inline constexpr const char* kSafetensorsFile = "model.safetensors";
inline constexpr const char* kSafetensorsIndexFile = "model.safetensors.index.json";

}  // namespace inferlab::engine
