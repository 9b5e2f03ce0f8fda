#pragma once
// The inferlab engine's switches as one value: what `inferlab bench --profile` records with each
// measurement ("switches" of an engine profile) and what `predict --framework inferlab` needs to
// price the same kernels. The engine side maps its EngineOptions/QuantConfig to this (and
// engine_switches_json writes it); everything that predicts the engine reads it back.
#include <nlohmann/json.hpp>
#include <string>

#include "predict/options.hpp"
#include "util/dtype.hpp"

namespace inferlab {

struct EngineSwitches {
  bool gemv = true;
  bool fusion = true;
  bool cuda_graphs = true;
  bool flash_attention = true;      // "attention": flash | naive
  DType weights = DType::bf16;      // bf16 | fp8 | int8 | int4
  DType kv = DType::bf16;           // bf16 | fp8 | int8
  DType activations = DType::bf16;  // bf16 | int8 (W8A8, with int8 weights)
  int tp = 1;                       // tensor-parallel GPUs (optional key, 1 when absent)
  // "rope": "qkv_epilogue" (RoPE and the KV write in the QKV GEMV where the engine can) or
  // "kernel" (their own kernel always); optional, "kernel" when absent: profiles taken before
  // the epilogue existed.
  bool rope_in_qkv = true;
  // "decode_cache": "early" (the streamed flash decode reads the cache rows of earlier passes
  // before its grid wait) or "after_wait"; optional, "after_wait" when absent.
  bool early_cache_reads = true;
  bool operator==(const EngineSwitches&) const = default;
};

// {"gemv": "on", "fusion": "off", "cuda_graphs": "on", "attention": "flash", "weights": "int4",
//  "kv": "bf16", "activations": "bf16"[, "tp": 2][, "rope": "qkv_epilogue"]
//  [, "decode_cache": "early"]}: every key but "tp", "rope" and "decode_cache" required (profiles
// taken before tensor parallelism have no "tp", those before the RoPE epilogue no "rope", those
// before the early cache reads no "decode_cache"), nothing else allowed; a missing or
// unknown key, a value not in its list, or int8 activations without int8 weights are
// InputErrors naming `context` and the key.
EngineSwitches parse_engine_switches(const nlohmann::json& switches, const std::string& context);
nlohmann::json engine_switches_json(const EngineSwitches& switches);
// "gemv=on fusion=off graphs=on attention=flash weights=int4 kv=bf16 activations=bf16": a
// combination's name in reports (and a group name of `validate --engine`).
std::string engine_switches_label(const EngineSwitches& switches);

// `predict --framework inferlab` with the same switches (batch and lengths left to the caller).
PredictOptions predict_options_for(const EngineSwitches& switches);

}  // namespace inferlab
