#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace inferlab {

enum class OutputFormat { table, json, csv };
OutputFormat parse_output_format(std::string_view name);  // throws InputError

// A plain table: text with aligned columns (numbers right-aligned), or CSV.
class Table {
 public:
  explicit Table(std::vector<std::string> headers) : headers_(std::move(headers)) {}
  void add_row(std::vector<std::string> row);
  std::string to_text() const;
  std::string to_csv() const;

 private:
  std::vector<std::string> headers_;
  std::vector<std::vector<std::string>> rows_;
};

// Human formatting for tables (JSON and CSV carry raw numbers).
std::string format_ms(double seconds);
std::string format_bytes(double bytes);  // "16.06 GB" (decimal units)
std::string format_count(double value);  // "1.23 G", "45.6 M"
std::string format_fixed(double value, int decimals);

}  // namespace inferlab
