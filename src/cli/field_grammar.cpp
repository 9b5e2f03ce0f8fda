#include "cli/field_grammar.hpp"

#include <map>

namespace inferlab::cli {

std::string flag_of_field(const std::string& field) {
  // Request field (PredictOptions, WorkloadSpec, CapacityPlanRequest, ExploreRequest) -> flag.
  static const std::map<std::string, std::string> kFlags = {
      {"batch", "--batch"},
      {"input_tokens", "--input"},
      {"output_tokens", "--output"},
      {"tp", "--tp"},
      {"gpu_memory_utilization", "--gpu-memory-utilization"},
      {"weights", "--weights"},
      {"activations", "--activations"},
      {"kv", "--kv"},
      {"requests", "--requests"},
      {"rate_per_s", "--rate"},
      {"usd_per_device_hour", "--price"},
      {"hardware", "--hardware"},
      {"axes", "--vary"},
      {"template_change", "--vary"},
      {"workload", "--workload"},
      {"input", "--input-dist"},
      {"output", "--output-dist"},
      {"arrival", "--arrival"},
      {"prefix", "--shared-prefix"},
  };
  const auto it = kFlags.find(field);
  return it == kFlags.end() ? field : it->second;
}

}  // namespace inferlab::cli
