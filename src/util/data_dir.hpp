#pragma once
#include <filesystem>
#include <string>
#include <vector>

namespace inferlab {

// One place shipped data (hardware/, models/, profiles/, calibrated/, ...) may live, and why.
struct DataDirCandidate {
  std::filesystem::path path;
  std::string origin;  // "INFERLAB_DATA_DIR", "beside the binary", "source tree"
};

// Where shipped data are looked for, in order: $INFERLAB_DATA_DIR when set; beside the running
// binary (<prefix>/bin/inferlab -> <prefix>/share/inferlab, what `cmake --install` writes); the
// source tree's data/ (compiled in, so a build runs from anywhere without installing).
std::vector<DataDirCandidate> data_dir_candidates();

// The first candidate that is a folder (the first candidate when none is: its files then fail
// to open with an error naming every place looked in).
std::filesystem::path data_dir();

// "looked in: A (INFERLAB_DATA_DIR), B (beside the binary), C (source tree)", for errors.
std::string data_dir_search_note();

// Names (file stems) of the *.json files in data_dir()/subfolder, sorted.
std::vector<std::string> data_names(const std::string& subfolder);

// A shipped name resolves to data_dir()/subfolder/<name>.json; anything containing '/' or
// ending in .json is a path. Unknown names throw InputError listing the known ones (and where
// it looked when there are none).
std::filesystem::path resolve_data_file(const std::string& name_or_path,
                                        const std::string& subfolder, const std::string& what);

// The folder of a fetched Hugging Face tokenizer (`llama3`, `qwen3`: tokenizer.json and
// tokenizer_config.json): $INFERLAB_TOKENIZERS_DIR/<name>, then data_dir()/tokenizers/<name>
// (what `cmake --install` writes), then the source tree's third_party/tokenizers/<name> (what
// scripts/fetch-tokenizer.sh fetches). InputError saying where it looked when none has it.
std::filesystem::path fetched_tokenizer_dir(const std::string& name);

}  // namespace inferlab
