#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cost/cost_loader.hpp"
#include "model/model_config.hpp"
#include "predict/options.hpp"
#include "serve/capacity.hpp"

namespace inferlab {

// `inferlab capacity`: every hardware x tensor-parallel degree, its highest rate within the
// SLO and what a million output tokens cost there.
struct CapacityPlanRequest {
  ModelConfig model;
  const ModelConfig* draft_model = nullptr;  // speculative decoding, when set
  std::vector<std::string> hardware;
  std::vector<int> tp_degrees;
  std::map<std::string, double> usd_per_device_hour;  // by hardware name; may be partial
  CostMethod cost = CostMethod::auto_;
  std::string profile = kProfileAuto;
  PredictOptions options;     // tp is set per configuration
  SchedulerConfig scheduler;  // KV size is set per configuration
  std::vector<ServeRequest> unit_rate_requests;
  CapacitySlo slo;
};

struct CapacityOutcome {
  std::string hardware;
  int tp = 1;
  bool fits = false;
  std::string note;  // why a configuration has no rate
  int64_t kv_blocks = 0;
  RateSearch search;
  double usd_per_device_hour = std::nan("");
  double usd_per_million_tokens = std::nan("");
};

// Cheapest first; then configurations without a price by rate; then those that cannot run.
std::vector<CapacityOutcome> plan_capacity(const CapacityPlanRequest& request);

// Replays a trace's arrival pattern at a mean of one request per second.
void normalise_to_unit_rate(std::vector<ServeRequest>& requests);

}  // namespace inferlab
