#include "predict/engine_switches.hpp"

#include <fmt/format.h>

#include <array>

#include "util/error.hpp"

namespace inferlab {

namespace {

constexpr std::array<const char*, 10> kKeys = {"gemv",    "fusion",      "cuda_graphs", "attention",
                                               "weights", "kv",          "activations", "tp",
                                               "rope",    "decode_cache"};

std::string value_of(const nlohmann::json& switches, const char* key, const std::string& context) {
  if (!switches.contains(key)) {
    throw InputError(context + ": switches: missing '" + key + "'");
  }
  const auto& v = switches[key];
  if (!v.is_string()) {
    throw InputError(context + ": switches." + key + " must be a string, got " + v.dump());
  }
  return v.get<std::string>();
}

std::string one_of(const nlohmann::json& switches, const char* key,
                   std::initializer_list<const char*> known, const std::string& context) {
  const std::string value = value_of(switches, key, context);
  for (const char* k : known) {
    if (value == k) return value;
  }
  throw InputError(context + ": switches." + key + " is '" + value +
                   "'; known: " + join_names(std::vector<std::string>(known.begin(), known.end())));
}

const char* on_off(bool on) {
  return on ? "on" : "off";
}

}  // namespace

EngineSwitches parse_engine_switches(const nlohmann::json& switches, const std::string& context) {
  if (!switches.is_object()) throw InputError(context + ": 'switches' must be an object");
  for (const auto& [key, value] : switches.items()) {
    bool known = false;
    for (const char* k : kKeys) known |= key == k;
    if (!known) {
      throw InputError(context + ": switches: unknown switch '" + key +
                       "'; known: " + join_names(kKeys));
    }
  }
  EngineSwitches s;
  s.gemv = one_of(switches, "gemv", {"on", "off"}, context) == "on";
  s.fusion = one_of(switches, "fusion", {"on", "off"}, context) == "on";
  s.cuda_graphs = one_of(switches, "cuda_graphs", {"on", "off"}, context) == "on";
  s.flash_attention = one_of(switches, "attention", {"flash", "naive"}, context) == "flash";
  s.weights = parse_dtype(one_of(switches, "weights", {"bf16", "fp8", "int8", "int4"}, context));
  s.kv = parse_dtype(one_of(switches, "kv", {"bf16", "fp8", "int8"}, context));
  s.activations = parse_dtype(one_of(switches, "activations", {"bf16", "int8"}, context));
  if (s.activations == DType::int8 && s.weights != DType::int8) {
    throw InputError(context + ": switches.activations int8 needs weights int8 (W8A8), got " +
                     std::string(dtype_name(s.weights)));
  }
  if (switches.contains("tp")) {
    const auto& tp = switches["tp"];
    if (!tp.is_number_integer() || tp.get<int64_t>() < 1 || tp.get<int64_t>() > 64) {
      throw InputError(context + ": switches.tp must be an integer in [1, 64], got " + tp.dump());
    }
    s.tp = tp.get<int>();
  }
  s.rope_in_qkv = switches.contains("rope") &&
                  one_of(switches, "rope", {"qkv_epilogue", "kernel"}, context) == "qkv_epilogue";
  s.early_cache_reads =
      switches.contains("decode_cache") &&
      one_of(switches, "decode_cache", {"early", "after_wait"}, context) == "early";
  return s;
}

nlohmann::json engine_switches_json(const EngineSwitches& s) {
  nlohmann::json json = {{"gemv", on_off(s.gemv)},
                         {"fusion", on_off(s.fusion)},
                         {"cuda_graphs", on_off(s.cuda_graphs)},
                         {"attention", s.flash_attention ? "flash" : "naive"},
                         {"weights", dtype_name(s.weights)},
                         {"kv", dtype_name(s.kv)},
                         {"activations", dtype_name(s.activations)}};
  if (s.tp > 1) json["tp"] = s.tp;
  json["rope"] = s.rope_in_qkv ? "qkv_epilogue" : "kernel";
  json["decode_cache"] = s.early_cache_reads ? "early" : "after_wait";
  return json;
}

std::string engine_switches_label(const EngineSwitches& s) {
  // (" rope=qkv": the RoPE epilogue's engine, " cache=early" the flash decode's early cache
  // reads; labels of profiles before them are unchanged.)
  return fmt::format(
      "gemv={} fusion={} graphs={} attention={} weights={} kv={} activations={}{}{}{}",
      on_off(s.gemv), on_off(s.fusion), on_off(s.cuda_graphs),
      s.flash_attention ? "flash" : "naive", dtype_name(s.weights), dtype_name(s.kv),
      dtype_name(s.activations), s.tp > 1 ? fmt::format(" tp={}", s.tp) : "",
      s.rope_in_qkv ? " rope=qkv" : "", s.early_cache_reads ? " cache=early" : "");
}

PredictOptions predict_options_for(const EngineSwitches& s) {
  PredictOptions o;
  o.framework = Framework::inferlab;
  o.gemv = s.gemv;
  o.fusion = s.fusion;
  o.cuda_graphs = s.cuda_graphs;
  o.flash_attention = s.flash_attention;
  o.weights = s.weights;
  o.kv = s.kv;
  o.activations = s.activations;
  o.tp = s.tp;
  o.rope_in_qkv = s.rope_in_qkv;
  o.early_cache_reads = s.early_cache_reads;
  return o;
}

}  // namespace inferlab
