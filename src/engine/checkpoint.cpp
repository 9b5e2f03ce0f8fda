#include "engine/checkpoint.hpp"

#include <set>

#include "util/error.hpp"
#include "util/json_file.hpp"

namespace inferlab::engine {

namespace {

// A shard name from the index: a plain file name inside the folder, nothing that climbs out.
bool plain_file_name(const std::string& name) {
  return !name.empty() && name != "." && name != ".." &&
         name.find_first_of("/\\") == std::string::npos && name.find('\0') == std::string::npos;
}

}  // namespace

std::map<std::string, std::set<std::string>> parse_checkpoint_index(const nlohmann::json& index,
                                                                    const std::string& context) {
  if (!index.is_object() || !index.contains("weight_map") || !index["weight_map"].is_object()) {
    throw InputError(context + ": expected an object with a 'weight_map' object");
  }
  std::map<std::string, std::set<std::string>> names_by_shard;
  for (const auto& [name, shard] : index["weight_map"].items()) {
    if (!shard.is_string() || !plain_file_name(shard.get<std::string>())) {
      throw InputError(context + ": tensor '" + name +
                       "' maps to something other than a file name in the folder");
    }
    names_by_shard[shard.get<std::string>()].insert(name);
  }
  if (names_by_shard.empty()) throw InputError(context + ": the weight_map is empty");
  return names_by_shard;
}

Checkpoint Checkpoint::open(const std::filesystem::path& folder) {
  Checkpoint checkpoint;
  checkpoint.folder_ = folder;
  const auto index_path = folder / kSafetensorsIndexFile;
  const auto single_path = folder / kSafetensorsFile;
  std::error_code error;
  if (std::filesystem::exists(index_path, error)) {
    const std::string context = "checkpoint index '" + index_path.string() + "'";
    const auto names_by_shard =
        parse_checkpoint_index(read_json_file(index_path, "checkpoint index"), context);
    for (const auto& [shard, names] : names_by_shard) {
      auto file = std::make_unique<SafetensorsFile>(folder / shard);
      for (const auto& name : names) {
        if (file->find(name) == nullptr) {
          throw InputError(context + ": tensor '" + name + "' is not in its shard '" +
                           file->path() + "'");
        }
      }
      for (const auto& info : file->tensors()) {
        if (!names.contains(info.name)) {
          throw InputError("safetensors file '" + file->path() + "': tensor '" + info.name +
                           "' is not listed for this shard in " + index_path.string());
        }
        checkpoint.tensors_.emplace(info.name, file->view(info));
      }
      checkpoint.files_.push_back(std::move(file));
    }
  } else if (std::filesystem::exists(single_path, error)) {
    auto file = std::make_unique<SafetensorsFile>(single_path);
    for (const auto& info : file->tensors())
      checkpoint.tensors_.emplace(info.name, file->view(info));
    checkpoint.files_.push_back(std::move(file));
  } else {
    throw InputError("checkpoint folder '" + folder.string() + "' has neither " + kSafetensorsFile +
                     " nor " + kSafetensorsIndexFile +
                     " (a Hugging Face checkpoint folder, or `inferlab init-weights` output)");
  }
  return checkpoint;
}

const TensorView* Checkpoint::find(std::string_view name) const {
  auto it = tensors_.find(std::string(name));
  return it == tensors_.end() ? nullptr : &it->second;
}

}  // namespace inferlab::engine
