#include "test_support.hpp"

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "util/data_dir.hpp"

namespace inferlab::testing {

namespace {
std::string slurp(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}
}  // namespace

CommandResult run_command(const std::string& command_line) {
  static int counter = 0;
  auto dir = std::filesystem::temp_directory_path() /
             ("inferlab_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
  std::filesystem::create_directories(dir);
  std::string cmd =
      command_line + " >" + (dir / "out").string() + " 2>" + (dir / "err").string() + " </dev/null";
  int status = std::system(cmd.c_str());
  CommandResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = slurp(dir / "out");
  r.err = slurp(dir / "err");
  std::filesystem::remove_all(dir);
  return r;
}

CommandResult run_inferlab(const std::string& args) {
  return run_command(inferlab_binary() + " " + args);
}

nlohmann::json run_inferlab_json(const std::string& args, bool quiet_stderr) {
  const CommandResult r = run_inferlab(args + " --format json");
  EXPECT_EQ(r.exit_code, 0) << args << "\n" << r.err;
  if (quiet_stderr) EXPECT_TRUE(r.err.empty()) << r.err;
  return nlohmann::json::parse(r.out);
}

std::string test_data_dir() {
  return INFERLAB_TEST_DATA_DIR;
}
std::string build_dir() {
  return INFERLAB_BUILD_DIR;
}
std::string cmake_command() {
  return INFERLAB_CMAKE_COMMAND;
}
std::string inferlab_binary() {
  // The GPU machine runs a copy of the test binary away from its build folder
  // (validation/make_gpu_bundle.sh): there the inferlab beside it is named by the environment.
  if (const char* copied = std::getenv("INFERLAB_TEST_BINARY"); copied != nullptr && *copied) {
    return copied;
  }
  return INFERLAB_BINARY;
}

nlohmann::json tiny_llama_config(int64_t vocab_size, int64_t max_position_embeddings) {
  return {{"architectures", {"LlamaForCausalLM"}},
          {"model_type", "llama"},
          {"hidden_size", 32},
          {"intermediate_size", 64},
          {"num_hidden_layers", 2},
          {"num_attention_heads", 4},
          {"num_key_value_heads", 2},
          {"head_dim", 8},
          {"vocab_size", vocab_size},
          {"max_position_embeddings", max_position_embeddings},
          {"rms_norm_eps", 1e-5},
          {"rope_theta", 10000.0}};
}

bool have_llama3_tokenizer() {
  try {
    fetched_tokenizer_dir("llama3");
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

void expect_refused(const std::vector<std::string>& cases) {
  for (const auto& args : cases) {
    auto r = run_inferlab(args);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.err;
    EXPECT_TRUE(r.out.empty()) << args;
    EXPECT_EQ(r.err.rfind("inferlab: error: ", 0), 0u) << args << "\n" << r.err;
  }
}

}  // namespace inferlab::testing
