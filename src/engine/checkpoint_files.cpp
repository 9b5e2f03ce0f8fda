#include "engine/checkpoint_files.hpp"

#include <fstream>
#include <regex>
#include <stdexcept>
#include <string>

#include "util/error.hpp"

namespace inferlab::engine {

void prepare_checkpoint_folder(const std::filesystem::path& folder, const char* command) {
  namespace fs = std::filesystem;
  if (folder.empty()) throw InputError(std::string(command) + ": no output folder given");
  std::error_code error;
  fs::create_directories(folder, error);
  if (!fs::is_directory(folder, error)) {
    throw InputError("cannot create the output folder '" + folder.string() + "'");
  }
  static const std::regex kWeightFile(R"(model(-\d+-of-\d+)?\.safetensors(\.index\.json)?)");
  for (const auto& entry : fs::directory_iterator(folder)) {
    if (entry.is_regular_file() &&
        std::regex_match(entry.path().filename().string(), kWeightFile)) {
      fs::remove(entry.path());
    }
  }
}

void write_json_file(const std::filesystem::path& path, const nlohmann::json& value) {
  std::ofstream out(path);
  out << value.dump(2) << "\n";
  if (!out) throw std::runtime_error("writing '" + path.string() + "' failed");
}

void copy_into(const std::filesystem::path& source, const std::filesystem::path& target,
               const char* what) {
  std::error_code error;
  if (!std::filesystem::is_regular_file(source, error)) {
    throw InputError(std::string(what) + " '" + source.string() + "' does not exist");
  }
  std::filesystem::copy_file(source, target, std::filesystem::copy_options::overwrite_existing,
                             error);
  if (error) {
    throw std::runtime_error("copying '" + source.string() + "' to '" + target.string() +
                             "' failed: " + error.message());
  }
}

std::filesystem::path write_generation_config(const std::filesystem::path& folder,
                                              const LlamaConfig& config) {
  nlohmann::json generation = {{"_from_model_config", true}};
  for (const char* key : {"bos_token_id", "eos_token_id", "pad_token_id"}) {
    if (config.hf_config.contains(key) && !config.hf_config[key].is_null()) {
      generation[key] = config.hf_config[key];
    }
  }
  const auto path = folder / "generation_config.json";
  write_json_file(path, generation);
  return path;
}

}  // namespace inferlab::engine
