#include "engine/engine_tuning.hpp"

#include <algorithm>
#include <cstdlib>
#include <string>

namespace inferlab::engine {

namespace {

// The variable's text; nullptr when it is unset or empty.
const char* variable(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr || *value == '\0' ? nullptr : value;
}

// A count from the variable (negative as 0); `fallback` when it is unset.
int64_t count(const char* name, int64_t fallback) {
  const char* value = variable(name);
  return value == nullptr ? fallback : std::max<int64_t>(0, std::atoll(value));
}

// Whether the variable is exactly `text`.
bool equals(const char* name, const char* text) {
  const char* value = variable(name);
  return value != nullptr && std::string(value) == text;
}

}  // namespace

EngineTuning engine_tuning_from_environment() {
  EngineTuning t;
  ProjectionTuning& p = t.projection;
  p.gemv = !equals("INFERLAB_ENGINE_GEMV", "0");
  p.gemv_rows_all = count("INFERLAB_ENGINE_GEMV_ROWS", -1);
  const char* per_format[] = {"INFERLAB_ENGINE_GEMV_ROWS_BF16", "INFERLAB_ENGINE_GEMV_ROWS_INT8",
                              "INFERLAB_ENGINE_GEMV_ROWS_INT4", "INFERLAB_ENGINE_GEMV_ROWS_FP8",
                              "INFERLAB_ENGINE_GEMV_ROWS_W8A8"};
  for (size_t i = 0; i < p.gemv_rows.size(); ++i) p.gemv_rows[i] = count(per_format[i], -1);
  if (const char* stream = variable("INFERLAB_ENGINE_GEMV_STREAM")) {
    p.gemv_stream = std::string(stream) != "0" ? 1 : 0;
  }
  // "0" and "1" as the other PDL switch reads them (and as the first A/B runs named them).
  p.gemv_pdl =
      equals("INFERLAB_ENGINE_GEMV_PDL", "off") || equals("INFERLAB_ENGINE_GEMV_PDL", "0")
          ? GemvPdlChoice::off
      : equals("INFERLAB_ENGINE_GEMV_PDL", "early") || equals("INFERLAB_ENGINE_GEMV_PDL", "1")
          ? GemvPdlChoice::early
      : equals("INFERLAB_ENGINE_GEMV_PDL", "late") ? GemvPdlChoice::late
                                                   : GemvPdlChoice::automatic;
  p.gemv_splits = count("INFERLAB_ENGINE_GEMV_SPLITS", 0);
  p.gemv_prologue = equals("INFERLAB_ENGINE_GEMV_PROLOGUE", "fused") ? GemvPrologueChoice::fused
                    : equals("INFERLAB_ENGINE_GEMV_PROLOGUE", "prepared")
                        ? GemvPrologueChoice::prepared
                        : GemvPrologueChoice::automatic;
  p.lt_tune = equals("INFERLAB_ENGINE_LT_TUNE", "1");

  AttentionTuning& a = t.attention;
  a.hopper_prefill = !equals("INFERLAB_ENGINE_HOPPER_PREFILL", "0");
  a.programmatic_launch = !equals("INFERLAB_ENGINE_ATTENTION_PDL", "0");
  a.decode_kernel = equals("INFERLAB_ENGINE_DECODE_KERNEL", "chunked") ? DecodeKernelChoice::chunked
                    : equals("INFERLAB_ENGINE_DECODE_KERNEL", "streamed")
                        ? DecodeKernelChoice::streamed
                        : DecodeKernelChoice::automatic;
  a.decode_splits = count("INFERLAB_ENGINE_DECODE_SPLITS", 0);
  a.cache_before_wait = !equals("INFERLAB_ENGINE_EARLY_CACHE", "0");

  t.host_sampling = equals("INFERLAB_ENGINE_HOST_SAMPLING", "1");
  t.rope_in_qkv = !equals("INFERLAB_ENGINE_ROPE_IN_QKV", "0");
  t.moe_gemm = equals("INFERLAB_ENGINE_MOE_GEMM", "per_expert")   ? MoeGemmChoice::per_expert
               : equals("INFERLAB_ENGINE_MOE_GEMM", "one_launch") ? MoeGemmChoice::one_launch
                                                                  : MoeGemmChoice::automatic;
  t.decode_layers = equals("INFERLAB_ENGINE_DECODE_LAYERS", "kernels") ? DecodeLayersChoice::kernels
                    : equals("INFERLAB_ENGINE_DECODE_LAYERS", "persistent")
                        ? DecodeLayersChoice::persistent
                        : DecodeLayersChoice::automatic;
  if (const char* trace = variable("INFERLAB_ENGINE_DECODE_TRACE")) t.decode_trace = trace;
  t.decode_ring_slots = count("INFERLAB_ENGINE_DECODE_RING", 0);
  t.one_shot_max_bytes = count("INFERLAB_ENGINE_ONE_SHOT_MAX_BYTES", t.one_shot_max_bytes);
  t.two_shot_max_bytes = count("INFERLAB_ENGINE_TWO_SHOT_MAX_BYTES", t.two_shot_max_bytes);
  return t;
}

}  // namespace inferlab::engine
