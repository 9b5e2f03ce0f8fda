#pragma once
// What a mixture of experts' router did in one forward pass: how many experts each layer's slots
// reached and how unevenly they spread. The prediction prices a pass by the experts it reaches
// (model/engine_blocks.cpp); these counts are what `bench --profile` records beside each profiled
// pass, so that the routing's imbalance is measured rather than assumed uniform
// (validation/moe_routing.py turns them into data/routing/<model>.json).
#include <cstdint>
#include <span>
#include <vector>

namespace inferlab::engine {

struct RoutingStats {
  int64_t layers = 0;               // MoE layers recorded
  int64_t tokens = 0;               // tokens routed in each layer
  int64_t experts_reached_sum = 0;  // over the layers: experts with at least one slot
  int64_t max_rows_sum = 0;         // over the layers: the busiest expert's slots
  // Over the layers: each layer's slot counts, sorted busiest first ([num_experts]).
  std::vector<int64_t> sorted_loads_sum;

  bool empty() const { return layers == 0; }
  void clear() { *this = RoutingStats{}; }
  // One layer's choices: `expert_ids` [tokens x top_k], each in [0, num_experts);
  // std::invalid_argument for an id outside, or a layer of another width than the ones before.
  void add_layer(std::span<const int32_t> expert_ids, int64_t tokens, int64_t num_experts);
  double experts_reached_mean() const;
  double max_rows_mean() const;
};

}  // namespace inferlab::engine
