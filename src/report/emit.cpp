#include "report/emit.hpp"

#include <iostream>

namespace inferlab {

void emit(const nlohmann::json& json, const std::string& text, const std::string& csv,
          OutputFormat format) {
  switch (format) {
    case OutputFormat::json:
      std::cout << json.dump(2) << '\n';
      return;
    case OutputFormat::csv:
      std::cout << csv;
      return;
    case OutputFormat::table:
      std::cout << text;
      return;
  }
}

void emit(const nlohmann::json& json, const Table& table, OutputFormat format) {
  emit(json, table.to_text(), table.to_csv(), format);
}

}  // namespace inferlab
