#pragma once
#include <cstdint>
#include <vector>

#include "engine/backend.hpp"
#include "serve/executor.hpp"

namespace inferlab::engine {

// The engine's executor for serve's scheduler (DESIGN: one scheduler, two executors): each
// iteration the scheduler forms runs as one forward pass of the backend over every scheduled
// sequence's new tokens, through the block tables of the scheduler's block manager (whose pool
// is the backend's KV pool), and takes as long as it took on the wall clock.
//
// Requests carry lengths, not text: each request's prompt ids are drawn from (seed, request
// index), except that a shared prefix (prefix_id ≥ 0) has the same ids in every request with
// that id, drawn from (seed, prefix id) — so the KV blocks that prefix caching shares hold the
// same tokens. Tokens are picked greedily. Speculative decoding is not run here yet.
class ServingExecutor : public Executor {
 public:
  ServingExecutor(Backend& backend, const std::vector<ServeRequest>& requests, uint64_t seed);

  IterationOutcome execute(const ScheduledIteration& iteration) override;

  // Request i's prompt ids and the tokens generated for it, in order.
  const std::vector<int32_t>& prompt(size_t request) const { return prompts_[request]; }
  const std::vector<int32_t>& generated(size_t request) const { return generated_[request]; }
  int64_t forward_passes() const { return forward_passes_; }

 private:
  // Token at `position` of request i: its prompt, then what it generated.
  int32_t token_at(size_t request, int64_t position) const;

  Backend& backend_;
  std::vector<std::vector<int32_t>> prompts_, generated_;
  int64_t forward_passes_ = 0;
};

}  // namespace inferlab::engine
