#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "report/table.hpp"

namespace inferlab {

// Writes one command's result to stdout in the chosen format: JSON (one object, nothing else),
// the text table, or the table as CSV. A command is then parse -> call -> build report -> emit.
void emit(const nlohmann::json& json, const Table& table, OutputFormat format);

// For results whose text is more than one table: text and CSV already rendered.
void emit(const nlohmann::json& json, const std::string& text, const std::string& csv,
          OutputFormat format);

}  // namespace inferlab
