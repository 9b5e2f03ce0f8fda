// cli::run_command, which the executable's main() and the Python binding share: a command line
// run in-process, its output captured, the process's streams given back afterwards.
#include "cli/run_command.hpp"

#include <gtest/gtest.h>

#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "test_support.hpp"

namespace inferlab {
namespace {

TEST(RunCommand, CapturesTheOutputTheExecutablePrints) {
  const std::vector<std::string> args = {"predict", "--model", "llama-3.2-1b", "--format", "json"};
  const cli::CommandOutput in_process = cli::run_command_captured(args);
  ASSERT_EQ(in_process.exit_code, 0) << in_process.err;
  EXPECT_EQ(in_process.err, "");
  const testing::CommandResult binary = testing::run_inferlab(
      "predict --model llama-3.2-1b "
      "--format json");
  ASSERT_EQ(binary.exit_code, 0) << binary.err;
  EXPECT_EQ(nlohmann::json::parse(in_process.out), nlohmann::json::parse(binary.out));
}

TEST(RunCommand, ErrorsAreTheExecutables) {
  for (const std::string& args :
       {std::string("no-such-command"), std::string("predict --batch -1"),
        std::string("predict --model no-such-model"), std::string("predict --no-such-flag 3")}) {
    std::vector<std::string> words;
    std::istringstream split(args);
    for (std::string word; split >> word;) words.push_back(word);
    const cli::CommandOutput in_process = cli::run_command_captured(words);
    const testing::CommandResult binary = testing::run_inferlab(args);
    EXPECT_EQ(in_process.exit_code, 2) << args;
    EXPECT_EQ(in_process.exit_code, binary.exit_code) << args;
    EXPECT_EQ(in_process.out, "") << args;
    EXPECT_EQ(in_process.err, binary.err) << args;
  }
}

TEST(RunCommand, GivesTheStreamsBack) {
  std::ostringstream out, err;
  std::streambuf* const cout = std::cout.rdbuf(out.rdbuf());
  std::streambuf* const cerr = std::cerr.rdbuf(err.rdbuf());
  cli::run_command_captured({"predict", "--format", "json"});
  cli::run_command_captured({"predict", "--model", "no-such-model"});
  EXPECT_EQ(std::cout.rdbuf(), out.rdbuf());
  EXPECT_EQ(std::cerr.rdbuf(), err.rdbuf());
  std::cout << "after";
  std::cout.rdbuf(cout);
  std::cerr.rdbuf(cerr);
  EXPECT_EQ(out.str(), "after");  // nothing of the commands' output
  EXPECT_EQ(err.str(), "");
}

}  // namespace
}  // namespace inferlab
