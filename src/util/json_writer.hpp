#pragma once
#include <nlohmann/json.hpp>
#include <string>

namespace inferlab {

// Writes `json` to `path` as the shipped data files are written (two-space indent, a final
// newline). InputError when the file cannot be opened for writing.
void write_json_file(const std::string& path, const nlohmann::json& json);

}  // namespace inferlab
