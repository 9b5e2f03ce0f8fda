#include "report/table.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "util/enum_names.hpp"

namespace inferlab {

namespace {
constexpr EnumNameTable<OutputFormat, 3> kOutputFormatNames = {{
    {OutputFormat::table, "table"},
    {OutputFormat::json, "json"},
    {OutputFormat::csv, "csv"},
}};
}  // namespace

OutputFormat parse_output_format(std::string_view name) {
  return parse_enum(kOutputFormatNames, name, "format");
}

void Table::add_row(std::vector<std::string> row) {
  row.resize(headers_.size());
  rows_.push_back(std::move(row));
}

namespace {
bool looks_numeric(const std::string& cell) {
  return !cell.empty() &&
         (std::isdigit(static_cast<unsigned char>(cell[0])) || (cell[0] == '-' && cell.size() > 1));
}
std::string csv_escape(const std::string& cell) {
  if (cell.find_first_of(",\"\n") == std::string::npos) return cell;
  std::string out = "\"";
  for (char c : cell) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}
}  // namespace

std::string Table::to_text() const {
  std::vector<size_t> width(headers_.size());
  for (size_t i = 0; i < headers_.size(); ++i) width[i] = headers_[i].size();
  for (const auto& row : rows_) {
    for (size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  }
  std::string out;
  auto emit = [&](const std::vector<std::string>& row, bool header) {
    for (size_t i = 0; i < row.size(); ++i) {
      bool right = !header && looks_numeric(row[i]) && i > 0;
      out +=
          right ? fmt::format("{:>{}}", row[i], width[i]) : fmt::format("{:<{}}", row[i], width[i]);
      out += i + 1 < row.size() ? "  " : "";
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    out += '\n';
  };
  emit(headers_, true);
  size_t total = 0;
  for (size_t w : width) total += w + 2;
  out += std::string(total > 2 ? total - 2 : 0, '-') + '\n';
  for (const auto& row : rows_) emit(row, false);
  return out;
}

std::string Table::to_csv() const {
  std::string out;
  auto emit = [&](const std::vector<std::string>& row) {
    for (size_t i = 0; i < row.size(); ++i) {
      out += csv_escape(row[i]);
      out += i + 1 < row.size() ? "," : "\n";
    }
  };
  emit(headers_);
  for (const auto& row : rows_) emit(row);
  return out;
}

std::string format_ms(double seconds) {
  double ms = seconds * 1e3;
  if (ms >= 100.0) return fmt::format("{:.1f}", ms);
  if (ms >= 1.0) return fmt::format("{:.3f}", ms);
  return fmt::format("{:.4f}", ms);
}

std::string format_bytes(double bytes) {
  if (bytes >= 1e9) return fmt::format("{:.2f} GB", bytes / 1e9);
  if (bytes >= 1e6) return fmt::format("{:.2f} MB", bytes / 1e6);
  if (bytes >= 1e3) return fmt::format("{:.1f} KB", bytes / 1e3);
  return fmt::format("{:.0f} B", bytes);
}

std::string format_count(double value) {
  double a = std::fabs(value);
  if (a >= 1e12) return fmt::format("{:.2f} T", value / 1e12);
  if (a >= 1e9) return fmt::format("{:.2f} G", value / 1e9);
  if (a >= 1e6) return fmt::format("{:.2f} M", value / 1e6);
  if (a >= 1e3) return fmt::format("{:.1f} K", value / 1e3);
  return fmt::format("{:.0f}", value);
}

std::string format_fixed(double value, int decimals) {
  return fmt::format("{:.{}f}", value, decimals);
}

}  // namespace inferlab
