#include "util/json_file.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "util/error.hpp"
#include "util/text.hpp"

namespace inferlab {
namespace {

std::string error_of(const auto& call) {
  try {
    call();
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

// A JSON file over kMaxJsonFileBytes is refused from its size alone (a sparse file: nothing
// is read or allocated).
TEST(JsonFile, FileOverTheLimitIsRefusedUnread) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("inferlab_big_" + std::to_string(getpid()) + ".json");
  std::ofstream(path) << "{}";
  std::filesystem::resize_file(path, kMaxJsonFileBytes + 1);
  EXPECT_NE(error_of([&] { read_json_file(path, "hardware sheet"); }).find("above the limit"),
            std::string::npos);
  std::filesystem::remove(path);
}

// Nesting is bounded as it is parsed: deeper than kMaxJsonDepth is an InputError, not a stack
// as deep as the input (nlohmann's copy and dump recurse).
TEST(JsonFile, NestingOverTheLimitIsRefused) {
  const auto nested = [](int depth) { return std::string(depth, '[') + std::string(depth, ']'); };
  EXPECT_NO_THROW(parse_json_text(nested(kMaxJsonDepth), "t"));
  EXPECT_NE(error_of([&] { parse_json_text(nested(kMaxJsonDepth + 2), "t"); }).find("nested"),
            std::string::npos);
  EXPECT_NE(error_of([&] { parse_json_text(nested(1'000'000), "t"); }).find("nested"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              parse_json_text("{\"a\":", "config.json");
            }).find("config.json is not valid JSON"),
            std::string::npos);
}

// Fuzz finding (config_json, hardware_template; fuzz/corpus/*/finding-number-out-of-range.*): a
// number beyond double's range ("1e805") made nlohmann throw out_of_range, not parse_error, so
// it escaped as "run failed" (exit 1) instead of an InputError (exit 2).
TEST(JsonFile, NumberOutOfRangeIsAnInputError) {
  for (const char* text : {"{\"rms_norm_eps\": 1e805}", "[-1e400]", "1E+99999"}) {
    EXPECT_NE(error_of([&] {
                parse_json_text(text, "config.json");
              }).find("config.json is not valid JSON"),
              std::string::npos)
        << text;
  }
}

TEST(Text, BoundedLineStopsAtTheBound) {
  std::istringstream in("abc\r\n\nabcdef\nxy");
  std::string line;
  EXPECT_EQ(read_bounded_line(in, line, 4), LineRead::line);
  EXPECT_EQ(line, "abc\r");
  EXPECT_EQ(read_bounded_line(in, line, 4), LineRead::line);
  EXPECT_EQ(line, "");
  EXPECT_EQ(read_bounded_line(in, line, 4), LineRead::too_long);
  EXPECT_EQ(line.size(), 4u);
  std::istringstream last("xy");
  EXPECT_EQ(read_bounded_line(last, line, 4), LineRead::line);
  EXPECT_EQ(line, "xy");
  EXPECT_EQ(read_bounded_line(last, line, 4), LineRead::end);
}

}  // namespace
}  // namespace inferlab
