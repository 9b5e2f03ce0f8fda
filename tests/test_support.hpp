#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cost/delay_factors.hpp"

// Time bounds in tests are set for an optimized build; the unoptimized ASan+UBSan build (preset
// `sanitize`) runs the same code 5-10x slower, so its bounds are this much wider (still far
// below what a quadratic blow-up would take).
#if defined(__SANITIZE_ADDRESS__)
#define INFERLAB_TEST_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define INFERLAB_TEST_SANITIZED 1
#endif
#endif

namespace inferlab::testing {

#ifdef INFERLAB_TEST_SANITIZED
inline constexpr double kTimeBoundScale = 10.0;
#else
inline constexpr double kTimeBoundScale = 1.0;
#endif

// Delay factors of 1 and a chosen kernel latency: hand-worked roofline numbers in tests do not
// depend on the shipped, measured factors.
inline DelayFactors unit_factors(double kernel_latency_s = 0.0) {
  DelayFactors f;
  f.factor.fill(1.0);
  f.kernel_latency_s = kernel_latency_s;
  f.gemv_max_rows = 16;
  f.source = "test";
  return f;
}

struct CommandResult {
  int exit_code = -1;
  std::string out, err;
};
// Runs a shell command line; stdout and stderr captured, no standard input.
CommandResult run_command(const std::string& command_line);
// Runs the inferlab binary with the given argument string (shell-quoted by the caller).
CommandResult run_inferlab(const std::string& args);
// Runs it with " --format json" added, expects exit 0 (and, when quiet_stderr, nothing on
// stderr) and returns stdout parsed: one JSON document, or the parse throws (failing the test).
nlohmann::json run_inferlab_json(const std::string& args, bool quiet_stderr = true);

// The engine commands' tests share these.
// A two-layer Llama config.json object (hidden 32, 4 heads of 8, 2 KV heads, MLP 64): small
// enough for the CPU reference in CI.
nlohmann::json tiny_llama_config(int64_t vocab_size, int64_t max_position_embeddings);
// Whether the Llama 3 tokenizer has been fetched (init-weights copies it into checkpoints).
bool have_llama3_tokenizer();
// Expects every command line to be refused: exit 2, nothing on stdout, "inferlab: error: ".
void expect_refused(const std::vector<std::string>& cases);

// The source tree's data/ folder (absolute): tests that read shipped files directly.
std::string test_data_dir();
// The build folder of these tests and the cmake that configured it (install tests).
std::string build_dir();
std::string cmake_command();
// The inferlab binary under test.
std::string inferlab_binary();

}  // namespace inferlab::testing
