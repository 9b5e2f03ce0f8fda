#pragma once
// A tiny checkpoint for the engine commands' CLI tests, written by `init-weights`.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "test_support.hpp"

#define REQUIRE_TOKENIZER() \
  if (!testing::have_llama3_tokenizer()) GTEST_SKIP() << "Llama 3 tokenizer not fetched"

namespace inferlab::testing {

// An untied Llama of a 300-token vocabulary and `max_positions` of context, random weights of
// seed 2, in a fresh folder `dir` (inferlab_<tag>_<pid> under the temp directory) removed at the
// end; the checkpoint is dir/ckpt.
struct TinyCheckpoint {
  std::filesystem::path dir, ckpt;
  TinyCheckpoint(const std::string& tag, int64_t max_positions) {
    dir = std::filesystem::temp_directory_path() /
          ("inferlab_" + tag + "_" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    nlohmann::json config = tiny_llama_config(300, max_positions);
    config["tie_word_embeddings"] = false;
    std::ofstream(dir / "tiny.json") << config.dump();
    ckpt = dir / "ckpt";
    auto r = run_inferlab("init-weights --model " + (dir / "tiny.json").string() + " --out " +
                          ckpt.string() + " --seed 2");
    EXPECT_EQ(r.exit_code, 0) << r.err;
  }
  TinyCheckpoint(const TinyCheckpoint&) = delete;  // one owner removes the folder
  TinyCheckpoint& operator=(const TinyCheckpoint&) = delete;
  ~TinyCheckpoint() { std::filesystem::remove_all(dir); }
};

}  // namespace inferlab::testing
