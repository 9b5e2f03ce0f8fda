#include "cli/predict_run.hpp"

namespace inferlab::cli {

PredictRun run_prediction(const CommonArgs& common, int64_t batch, int64_t input_tokens,
                          int64_t output_tokens) {
  PredictRun run{
      load_model(common.model), load_cost_model(common), to_predict_options(common), {}, {}};
  run.options.batch = batch;
  run.options.input_tokens = input_tokens;
  run.options.output_tokens = output_tokens;
  HostOverhead host = load_host_overhead();
  run.precision =
      make_step_context(run.model, run.hw.spec, *run.hw.cost, run.options, host).precision;
  run.prediction = predict_request(run.model, run.hw.spec, *run.hw.cost, run.options, host);
  return run;
}

}  // namespace inferlab::cli
