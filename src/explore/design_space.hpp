#pragma once
#include <map>
#include <string>
#include <vector>

#include "hw/hardware_template.hpp"
#include "model/model_config.hpp"
#include "predict/options.hpp"

namespace inferlab {

// One axis of the design space: a template key (see vary_template) and its values.
struct DesignAxis {
  std::string key;
  std::vector<std::string> values;
};

// cli/explore_grammar parses the text form "cores=66,132,memory=HBM3,DDR5".

// What each design runs: one prefill (batch x tokens) or one decode step (batch sequences at
// `context` tokens each). batch 0 means "the most sequences that fit" (capped at max_batch):
// the throughput a design reaches when its memory, not the request stream, limits the batch.
struct DesignWorkload {
  Phase phase = Phase::decode;
  int64_t batch = 0;
  int64_t tokens = 2048;   // prefill
  int64_t context = 2048;  // decode
  int64_t max_batch = 1024;
  std::string text;  // as given
};
// cli/explore_grammar parses the text form "decode:context=2048,batch=max" or
// "prefill:tokens=2048,batch=1".

struct DesignPoint {
  std::string name;
  std::map<std::string, std::string> settings;  // axis key -> value
  double die_area_mm2 = 0.0;
  double device_cost_usd = 0.0;
  double system_cost_usd = 0.0;  // devices x device cost
  bool fits = false;
  int64_t batch = 0;
  double step_s = 0.0;
  double tokens_per_s = 0.0;
  double tokens_per_s_per_kusd = 0.0;  // per 1,000 USD of system cost
  bool pareto = false;  // no other design is at most as costly and at least as fast, one strictly
};

struct ExploreRequest {
  std::string template_name;
  std::vector<DesignAxis> axes;
  ModelConfig model;
  DesignWorkload workload;
  PredictOptions options;  // tp inside
  int pp = 1;
  int max_designs = 4096;
};

// Every combination of the axes' values (the first axis varies slowest), each simulated with
// tilesim and priced with the area model, and the Pareto front of cost against throughput.
std::vector<DesignPoint> explore_designs(const ExploreRequest& request);

// Marks the points on the front (lower system cost, higher tokens/s).
void mark_pareto_front(std::vector<DesignPoint>& points);

}  // namespace inferlab
