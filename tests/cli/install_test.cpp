// `cmake --install` gives a self-contained inferlab: bin/inferlab finds its data in
// share/inferlab/ from any folder with an empty environment, and a missing data folder is an
// error that says where it looked.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "test_support.hpp"

namespace inferlab {
namespace {

using testing::run_command;

std::filesystem::path fresh_dir(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() / (name + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

TEST(Install, InstalledBinaryRunsFromAnotherFolderOnItsOwnData) {
  auto prefix = fresh_dir("inferlab_install");
  auto installed = run_command(testing::cmake_command() + " --install " + testing::build_dir() +
                               " --prefix " + prefix.string());
  ASSERT_EQ(installed.exit_code, 0) << installed.err;
  auto binary = prefix / "bin" / "inferlab";
  auto shared = prefix / "share" / "inferlab";
  ASSERT_TRUE(std::filesystem::is_regular_file(binary));
  ASSERT_TRUE(std::filesystem::is_regular_file(shared / "models" / "llama-3.2-1b.json"));
  ASSERT_TRUE(std::filesystem::is_regular_file(shared / "profiles" / "h100-sxm.json"));
  // A model that exists only in the installed copy: found only if that copy is the one read.
  std::filesystem::copy_file(shared / "models" / "llama-3.2-1b.json",
                             shared / "models" / "installed-only.json");
  auto r = run_command("cd / && env -i " + binary.string() +
                       " predict --model installed-only --format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_GT(j["ttft_ms"].get<double>(), 0.0);
  std::filesystem::remove_all(prefix);
}

TEST(Install, EmptyDataFolderSaysWhereItLooked) {
  auto empty = fresh_dir("inferlab_empty_data");
  auto r = run_command("INFERLAB_DATA_DIR=" + empty.string() + " " + testing::inferlab_binary() +
                       " predict --model llama-3.2-1b");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("inferlab: error: unknown model 'llama-3.2-1b'"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("looked in: " + empty.string() + " (INFERLAB_DATA_DIR)"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("(source tree)"), std::string::npos) << r.err;
  std::filesystem::remove_all(empty);
}

}  // namespace
}  // namespace inferlab
