#include "predict/sweep.hpp"

#include "util/error.hpp"

namespace inferlab {

std::vector<SweepRow> run_sweep(const ModelConfig& model, const HardwareSpec& hardware,
                                const CostModel& cost, const PredictOptions& base,
                                const HostOverhead& host, const SweepGrid& grid) {
  if (grid.batch.empty() || grid.input.empty() || grid.output.empty() || grid.tp.empty() ||
      grid.weights.empty()) {
    throw InputError("every sweep list needs at least one value");
  }
  size_t points = grid.batch.size() * grid.input.size() * grid.output.size() * grid.tp.size() *
                  grid.weights.size();
  if (points > 10'000'000)
    throw InputError("sweep of " + std::to_string(points) +
                     " points is over the limit of 10,000,000");
  std::vector<SweepRow> rows;
  rows.reserve(points);
  for (int tp : grid.tp) {
    for (DType weights : grid.weights) {
      for (int64_t batch : grid.batch) {
        for (int64_t input : grid.input) {
          for (int64_t output : grid.output) {
            PredictOptions o = base;
            o.tp = tp;
            o.weights = weights;
            o.batch = batch;
            o.input_tokens = input;
            o.output_tokens = output;
            RequestPrediction r = predict_request(model, hardware, cost, o, host);
            rows.push_back({batch, input, output, tp, weights, r.prefill_s, r.tpot_s, r.e2e_s,
                            r.decode_tokens_per_s, r.memory.total_bytes, r.memory.fits});
          }
        }
      }
    }
  }
  return rows;
}

}  // namespace inferlab
