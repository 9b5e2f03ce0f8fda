#pragma once
#include <optional>
#include <vector>

#include "predict/request_predictor.hpp"

namespace inferlab {

// The cross product of these lists, each point one predict_request().
struct SweepGrid {
  std::vector<int64_t> batch, input, output;
  std::vector<int> tp;
  std::vector<DType> weights;
};

struct SweepRow {
  int64_t batch = 0, input = 0, output = 0;
  int tp = 1;
  DType weights = DType::bf16;
  double prefill_s = 0, tpot_s = 0, e2e_s = 0, decode_tokens_per_s = 0;
  double memory_total_bytes = 0;
  bool fits = false;
};

// `base` supplies everything not swept (framework, kv, graphs, ...).
std::vector<SweepRow> run_sweep(const ModelConfig& model, const HardwareSpec& hardware,
                                const CostModel& cost, const PredictOptions& base,
                                const HostOverhead& host, const SweepGrid& grid);

}  // namespace inferlab
