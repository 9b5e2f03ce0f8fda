#pragma once
#include <filesystem>
#include <string>
#include <vector>

namespace inferlab {

// The folder holding hardware/, models/ and profiles/: $INFERLAB_DATA_DIR if set, else the
// source tree's data/ (compiled in), so a build runs from anywhere without installing.
std::filesystem::path data_dir();

// Names (file stems) of the *.json files in data_dir()/subfolder, sorted.
std::vector<std::string> data_names(const std::string& subfolder);

// A shipped name resolves to data_dir()/subfolder/<name>.json; anything containing '/' or
// ending in .json is a path. Unknown names throw InputError listing the known ones.
std::filesystem::path resolve_data_file(const std::string& name_or_path,
                                        const std::string& subfolder, const std::string& what);

}  // namespace inferlab
