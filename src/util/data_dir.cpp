#include "util/data_dir.hpp"

#include <algorithm>
#include <cstdlib>

#include "util/error.hpp"

#ifndef INFERLAB_SOURCE_DATA_DIR
#define INFERLAB_SOURCE_DATA_DIR "data"
#endif

namespace inferlab {

namespace {
// The running executable's folder (Linux: /proc/self/exe); empty when it cannot be read.
std::filesystem::path executable_dir() {
  std::error_code ec;
  auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::filesystem::path() : exe.parent_path();
}
}  // namespace

std::vector<DataDirCandidate> data_dir_candidates() {
  std::vector<DataDirCandidate> candidates;
  if (const char* env = std::getenv("INFERLAB_DATA_DIR"); env != nullptr && *env != '\0') {
    candidates.push_back({env, "INFERLAB_DATA_DIR"});
  }
  if (auto bin = executable_dir(); !bin.empty()) {
    candidates.push_back(
        {(bin.parent_path() / "share" / "inferlab").lexically_normal(), "beside the binary"});
  }
  candidates.push_back({INFERLAB_SOURCE_DATA_DIR, "source tree"});
  return candidates;
}

std::filesystem::path data_dir() {
  auto candidates = data_dir_candidates();
  for (const auto& candidate : candidates) {
    std::error_code ec;
    if (std::filesystem::is_directory(candidate.path, ec)) return candidate.path;
  }
  return candidates.front().path;
}

std::string data_dir_search_note() {
  std::vector<std::string> places;
  for (const auto& candidate : data_dir_candidates())
    places.push_back(candidate.path.string() + " (" + candidate.origin + ")");
  return "looked in: " + join_names(places) +
         "; set INFERLAB_DATA_DIR to the folder holding hardware/ and models/";
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
    auto known = data_names(subfolder);
    if (known.empty()) {
      throw InputError("unknown " + what + " '" + name_or_path + "': no shipped " + subfolder +
                       " found (" + data_dir_search_note() + ")");
    }
    throw InputError("unknown " + what + " '" + name_or_path + "'; known: " + join_names(known) +
                     " (or give a path to a .json file)");
  }
  return path;
}

std::filesystem::path fetched_tokenizer_dir(const std::string& name) {
  std::vector<std::filesystem::path> places;
  if (const char* env = std::getenv("INFERLAB_TOKENIZERS_DIR"); env != nullptr && *env != '\0') {
    places.push_back(std::filesystem::path(env) / name);
  }
  places.push_back(data_dir() / "tokenizers" / name);
  places.push_back(std::filesystem::path(INFERLAB_SOURCE_DATA_DIR).parent_path() / "third_party" /
                   "tokenizers" / name);
  std::vector<std::string> looked;
  for (const auto& place : places) {
    std::error_code ec;
    if (std::filesystem::is_regular_file(place / "tokenizer.json", ec)) return place;
    looked.push_back(place.string());
  }
  throw InputError("no fetched " + name + " tokenizer (looked in: " + join_names(looked) +
                   "); run scripts/fetch-tokenizer.sh or give --tokenizer FILE");
}

}  // namespace inferlab
