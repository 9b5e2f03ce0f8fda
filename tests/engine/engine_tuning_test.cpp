// engine_tuning_from_environment (engine/engine_tuning.hpp): the one reader of the
// INFERLAB_ENGINE_* variables. Unset, every field keeps the measured default; set, each variable
// lands in its field as the kernels used to read it themselves.
#include "engine/engine_tuning.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/engine_open.hpp"

namespace inferlab::engine {
namespace {

const std::vector<std::string> kVariables = {
    "INFERLAB_ENGINE_GEMV",           "INFERLAB_ENGINE_GEMV_ROWS",
    "INFERLAB_ENGINE_GEMV_ROWS_BF16", "INFERLAB_ENGINE_GEMV_ROWS_INT8",
    "INFERLAB_ENGINE_GEMV_ROWS_INT4", "INFERLAB_ENGINE_GEMV_ROWS_FP8",
    "INFERLAB_ENGINE_GEMV_ROWS_W8A8", "INFERLAB_ENGINE_GEMV_STREAM",
    "INFERLAB_ENGINE_GEMV_SPLITS",    "INFERLAB_ENGINE_GEMV_PROLOGUE",
    "INFERLAB_ENGINE_LT_TUNE",        "INFERLAB_ENGINE_HOPPER_PREFILL",
    "INFERLAB_ENGINE_ATTENTION_PDL",  "INFERLAB_ENGINE_DECODE_KERNEL",
    "INFERLAB_ENGINE_DECODE_SPLITS",  "INFERLAB_ENGINE_HOST_SAMPLING",
    "INFERLAB_ENGINE_GEMV_PDL",       "INFERLAB_ENGINE_MOE_GEMM",
    "INFERLAB_ENGINE_DECODE_LAYERS",  "INFERLAB_ENGINE_DECODE_TRACE",
    "INFERLAB_ENGINE_DECODE_RING",    "INFERLAB_ENGINE_ROPE_IN_QKV",
    "INFERLAB_ENGINE_EARLY_CACHE"};

using Variables = std::map<std::string, std::string>;

// Sets the given variables (and unsets the others of kVariables) for its lifetime; restores them
// after.
class Environment {
 public:
  explicit Environment(const Variables& set) {
    for (const std::string& name : kVariables) {
      const char* old = std::getenv(name.c_str());
      saved_[name] = old ? std::optional<std::string>(old) : std::nullopt;
      unsetenv(name.c_str());
    }
    for (const auto& [name, value] : set) setenv(name.c_str(), value.c_str(), 1);
  }
  ~Environment() {
    for (const auto& [name, value] : saved_) {
      if (value) {
        setenv(name.c_str(), value->c_str(), 1);
      } else {
        unsetenv(name.c_str());
      }
    }
  }

 private:
  std::map<std::string, std::optional<std::string>> saved_;
};

TEST(EngineTuning, TwentyThreeVariablesUnsetGiveTheMeasuredDefaults) {
  ASSERT_EQ(kVariables.size(), 23u);
  const Environment none(Variables{});
  const EngineTuning t = engine_tuning_from_environment();
  EXPECT_TRUE(t.projection.gemv);
  EXPECT_EQ(t.projection.gemv_rows_all, -1);
  for (int64_t rows : t.projection.gemv_rows) EXPECT_EQ(rows, -1);
  EXPECT_EQ(t.projection.gemv_stream, -1);
  EXPECT_EQ(t.projection.gemv_pdl, GemvPdlChoice::automatic);
  EXPECT_EQ(t.projection.gemv_splits, 0);
  EXPECT_EQ(t.projection.gemv_prologue, GemvPrologueChoice::automatic);
  EXPECT_FALSE(t.projection.lt_tune);
  EXPECT_TRUE(t.attention.hopper_prefill);
  EXPECT_TRUE(t.attention.programmatic_launch);
  EXPECT_EQ(t.attention.decode_kernel, DecodeKernelChoice::automatic);
  EXPECT_EQ(t.attention.decode_splits, 0);
  EXPECT_TRUE(t.attention.cache_before_wait);
  EXPECT_FALSE(t.host_sampling);
  EXPECT_TRUE(t.rope_in_qkv);
  EXPECT_EQ(t.moe_gemm, MoeGemmChoice::automatic);
  EXPECT_EQ(t.decode_layers, DecodeLayersChoice::automatic);
  EXPECT_TRUE(t.decode_trace.empty());
  EXPECT_EQ(t.decode_ring_slots, 0);
}

TEST(EngineTuning, EachVariableLandsInItsField) {
  const Environment set(Variables{{"INFERLAB_ENGINE_GEMV", "0"},
                                  {"INFERLAB_ENGINE_GEMV_ROWS", "8"},
                                  {"INFERLAB_ENGINE_GEMV_ROWS_INT4", "16"},
                                  {"INFERLAB_ENGINE_GEMV_ROWS_W8A8", "-3"},
                                  {"INFERLAB_ENGINE_GEMV_STREAM", "0"},
                                  {"INFERLAB_ENGINE_GEMV_PDL", "late"},
                                  {"INFERLAB_ENGINE_GEMV_SPLITS", "4"},
                                  {"INFERLAB_ENGINE_GEMV_PROLOGUE", "prepared"},
                                  {"INFERLAB_ENGINE_LT_TUNE", "1"},
                                  {"INFERLAB_ENGINE_HOPPER_PREFILL", "0"},
                                  {"INFERLAB_ENGINE_ATTENTION_PDL", "0"},
                                  {"INFERLAB_ENGINE_DECODE_KERNEL", "chunked"},
                                  {"INFERLAB_ENGINE_DECODE_SPLITS", "12"},
                                  {"INFERLAB_ENGINE_HOST_SAMPLING", "1"},
                                  {"INFERLAB_ENGINE_ROPE_IN_QKV", "0"},
                                  {"INFERLAB_ENGINE_EARLY_CACHE", "0"},
                                  {"INFERLAB_ENGINE_MOE_GEMM", "per_expert"}});
  const EngineTuning t = engine_tuning_from_environment();
  EXPECT_EQ(t.moe_gemm, MoeGemmChoice::per_expert);
  EXPECT_FALSE(t.projection.gemv);
  EXPECT_EQ(t.projection.gemv_rows_all, 8);
  EXPECT_EQ(t.projection.gemv_rows[0], -1);  // bf16: unset, so the limit for all applies
  EXPECT_EQ(t.projection.gemv_rows[2], 16);  // int4
  EXPECT_EQ(t.projection.gemv_rows[4], 0);   // w8a8: a negative count is 0 (GEMV off)
  EXPECT_EQ(t.projection.gemv_stream, 0);
  EXPECT_EQ(t.projection.gemv_pdl, GemvPdlChoice::late);
  EXPECT_EQ(t.projection.gemv_splits, 4);
  EXPECT_EQ(t.projection.gemv_prologue, GemvPrologueChoice::prepared);
  EXPECT_TRUE(t.projection.lt_tune);
  EXPECT_FALSE(t.attention.hopper_prefill);
  EXPECT_FALSE(t.attention.programmatic_launch);
  EXPECT_EQ(t.attention.decode_kernel, DecodeKernelChoice::chunked);
  EXPECT_EQ(t.attention.decode_splits, 12);
  EXPECT_FALSE(t.attention.cache_before_wait);
  EXPECT_TRUE(t.host_sampling);
  EXPECT_FALSE(t.rope_in_qkv);
}

TEST(EngineTuning, OnlyTheExactSwitchValuesSwitch) {
  // As the kernels read them: GEMV and the Hopper/PDL switches turn off only at "0", LT tuning
  // and host sampling on only at "1", an empty variable is unset, other names keep `automatic`.
  const Environment set(Variables{{"INFERLAB_ENGINE_GEMV", "no"},
                                  {"INFERLAB_ENGINE_LT_TUNE", "yes"},
                                  {"INFERLAB_ENGINE_HOPPER_PREFILL", ""},
                                  {"INFERLAB_ENGINE_GEMV_STREAM", "2"},
                                  {"INFERLAB_ENGINE_GEMV_PDL", "yes"},
                                  {"INFERLAB_ENGINE_DECODE_KERNEL", "fastest"},
                                  {"INFERLAB_ENGINE_GEMV_PROLOGUE", "fused"}});
  const EngineTuning t = engine_tuning_from_environment();
  EXPECT_TRUE(t.projection.gemv);
  EXPECT_FALSE(t.projection.lt_tune);
  EXPECT_TRUE(t.attention.hopper_prefill);
  EXPECT_EQ(t.projection.gemv_stream, 1);
  EXPECT_EQ(t.projection.gemv_pdl, GemvPdlChoice::automatic);  // off|early|late|0|1 only
  EXPECT_EQ(t.attention.decode_kernel, DecodeKernelChoice::automatic);
  EXPECT_EQ(t.projection.gemv_prologue, GemvPrologueChoice::fused);
}

TEST(EngineTuning, GemvPdlTakesNamesAndTheSwitchDigits) {
  const std::pair<const char*, GemvPdlChoice> cases[] = {
      {"off", GemvPdlChoice::off}, {"0", GemvPdlChoice::off},     {"early", GemvPdlChoice::early},
      {"1", GemvPdlChoice::early}, {"late", GemvPdlChoice::late}, {"", GemvPdlChoice::automatic}};
  for (const auto& [value, choice] : cases) {
    const Environment set(Variables{{"INFERLAB_ENGINE_GEMV_PDL", value}});
    EXPECT_EQ(engine_tuning_from_environment().projection.gemv_pdl, choice) << value;
  }
}

TEST(EngineTuning, MoeGemmTakesItsTwoNamesOnly) {
  const std::pair<const char*, MoeGemmChoice> cases[] = {{"per_expert", MoeGemmChoice::per_expert},
                                                         {"one_launch", MoeGemmChoice::one_launch},
                                                         {"1", MoeGemmChoice::automatic},
                                                         {"", MoeGemmChoice::automatic}};
  for (const auto& [value, choice] : cases) {
    const Environment set(Variables{{"INFERLAB_ENGINE_MOE_GEMM", value}});
    EXPECT_EQ(engine_tuning_from_environment().moe_gemm, choice) << value;
  }
}

TEST(EngineTuning, DecodeLayersTakesItsTwoNamesOnly) {
  const std::pair<const char*, DecodeLayersChoice> cases[] = {
      {"kernels", DecodeLayersChoice::kernels},
      {"persistent", DecodeLayersChoice::persistent},
      {"1", DecodeLayersChoice::automatic},
      {"Persistent", DecodeLayersChoice::automatic},
      {"", DecodeLayersChoice::automatic}};
  for (const auto& [value, choice] : cases) {
    const Environment set(Variables{{"INFERLAB_ENGINE_DECODE_LAYERS", value}});
    EXPECT_EQ(engine_tuning_from_environment().decode_layers, choice) << value;
  }
}

TEST(EngineTuning, DecodeTraceTakesAPathAndTheRingACount) {
  const Environment set(Variables{{"INFERLAB_ENGINE_DECODE_TRACE", "/tmp/trace.csv"},
                                  {"INFERLAB_ENGINE_DECODE_RING", "6"}});
  EXPECT_EQ(engine_tuning_from_environment().decode_trace, "/tmp/trace.csv");
  EXPECT_EQ(engine_tuning_from_environment().decode_ring_slots, 6);
}

TEST(EngineTuning, EngineOptionsCarryTheEnvironmentsTuning) {
  const Environment set(Variables{{"INFERLAB_ENGINE_DECODE_SPLITS", "7"}});
  const EngineOptions options;
  EXPECT_EQ(options.tuning.attention.decode_splits, 7);
}

}  // namespace
}  // namespace inferlab::engine
