#include "util/data_dir.hpp"

#include <algorithm>
#include <cstdlib>

#include "util/error.hpp"

#ifndef INFERLAB_SOURCE_DATA_DIR
#define INFERLAB_SOURCE_DATA_DIR "data"
#endif

namespace inferlab {

std::filesystem::path data_dir() {
  if (const char* env = std::getenv("INFERLAB_DATA_DIR"); env != nullptr && *env != '\0') {
    return env;
  }
  return INFERLAB_SOURCE_DATA_DIR;
}

std::vector<std::string> data_names(const std::string& subfolder) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(data_dir() / subfolder, ec)) {
    if (entry.path().extension() == ".json") names.push_back(entry.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::filesystem::path resolve_data_file(const std::string& name_or_path,
                                        const std::string& subfolder, const std::string& what) {
  if (name_or_path.empty()) throw InputError("empty " + what + " name");
  bool looks_like_path =
      name_or_path.find('/') != std::string::npos || name_or_path.ends_with(".json");
  if (looks_like_path) return name_or_path;
  auto path = data_dir() / subfolder / (name_or_path + ".json");
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    throw InputError("unknown " + what + " '" + name_or_path + "'; known: " +
                     join_names(data_names(subfolder)) + " (or give a path to a .json file)");
  }
  return path;
}

}  // namespace inferlab
