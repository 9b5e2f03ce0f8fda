#pragma once
#include <memory>

#include "cost/cost_model.hpp"
#include "cost/tilesim/gemm_mapper.hpp"
#include "hw/hardware_template.hpp"

namespace inferlab {

// Where the time of one simulated operator goes (seconds, not additive: the parts overlap).
struct TileSimBreakdown {
  double compute_s = 0.0;        // tensor units
  double vector_s = 0.0;         // vector and special-function units
  double local_s = 0.0;          // local buffers
  double global_s = 0.0;         // global buffer
  double memory_s = 0.0;         // main memory
  double communication_s = 0.0;  // links between devices
  double fixed_s = 0.0;          // kernel floors (and the memory ramp, see ramp_s)
  double ramp_s = 0.0;           // part of fixed_s: the memory pipeline's fill and drain
  double core_s = 0.0;           // what the cores take if memory were free (overlapped parts)
  double time_s = 0.0;
  std::string bound;
  std::string mapping;  // the mapping chosen, in words
};

// Cost model of a hardware template (hw/hardware_template.hpp), nothing fitted: GEMMs through
// the mapper's tile-level model; attention as FlashAttention tiles (prefill: query tiles in
// waves over the cores, K/V streamed through the global buffer, the scores' softmax on the
// vector and special-function units; decode: each (sequence, KV head) streams its cache);
// vector operators from their FLOPs on the vector units and their bytes at the bandwidth of
// the level they stream from (the global buffer when the tensor was just written and fits
// there, else main memory); collectives over the node's topology, ring or tree, whichever is
// faster. Times are in-stream (a CUDA-graph step); `isolated_time_s` adds what timing one
// kernel alone with events costs.
class TileSimCostModel : public CostModel {
 public:
  explicit TileSimCostModel(HardwareTemplate hardware, int threads = 0);
  OpCost price(const Op& op) const override;
  std::string name() const override { return "tilesim"; }
  double sustained_compute_slowdown() const override {
    return hw_->efficiency.sustained_compute_slowdown;
  }

  double isolated_time_s(const Op& op) const override;
  // {"mapping": the mapping chosen, in words}; null when the op has none.
  nlohmann::json describe(const Op& op) const override;

  TileSimBreakdown simulate(const Op& op) const;
  const HardwareTemplate& hardware() const { return *hw_; }
  const GemmMapper& mapper() const { return *mapper_; }

 private:
  TileSimBreakdown simulate_gemm(const Op& op) const;
  TileSimBreakdown simulate_attention(const Op& op) const;
  TileSimBreakdown simulate_vector(const Op& op) const;
  TileSimBreakdown simulate_noncontiguous(const Op& op) const;
  double norm_row_chain_s(const Op& op) const;  // a row's dependent memory round trips
  TileSimBreakdown simulate_collective(const Op& op) const;
  double stream_rate_bps(double bytes) const;  // global buffer if it fits, else main memory

  std::unique_ptr<HardwareTemplate> hw_;  // owned on the heap: the mapper keeps a reference
  std::unique_ptr<GemmMapper> mapper_;
};

}  // namespace inferlab
