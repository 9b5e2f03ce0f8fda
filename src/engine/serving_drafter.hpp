#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

#include "engine/backend.hpp"
#include "engine/kv_swap_space.hpp"
#include "engine/sampling.hpp"
#include "util/rng.hpp"

namespace inferlab::engine {

// A draft model for the serving executor's speculative decoding, batched over an iteration's
// sequences (what generate_speculative's drafter does for one sequence).
//
// The draft's KV pool has the target's block size and at least its blocks, so a sequence's
// draft KV lives at the same block ids as the target's: the scheduler's block tables serve both
// models, with no allocator of the draft's own. Every prefill chunk the target runs the draft
// runs too, so its KV is complete where the target's is, and a block that prefix caching hands
// out holds the same tokens for both models (both wrote it when it was computed).
//
// Each iteration the draft runs k passes (k: the most drafts of any decode item). The first runs
// the iteration's prefill chunks and, for each decode item, the tokens from where its draft KV
// ends to its last token inclusive: one token normally, two after a round that kept all k drafts
// (the draft never ran its own last proposal); each later pass runs one token per decode item
// that still drafts, its previous proposal. A round leaves draft KV up to the last proposal it
// ran; the next round starts at the target's computed positions where that is less, so the
// positions of rejected proposals are written again.
//
// Preemption by swap moves a sequence's target KV to host memory and back into other blocks:
// swap() moves the draft's along with it. Without that, a sequence whose blocks changed starts
// its draft KV again from its first changed block (a longer first pass), and one that came back
// into the same block ids would draft from stale KV (fewer drafts accepted; the tokens are still
// the target's).
class BatchDrafter {
 public:
  using Distribution = std::vector<std::pair<int32_t, double>>;

  // InputError unless `draft` has the target's vocabulary and block size and at least as many
  // KV blocks.
  BatchDrafter(Backend& draft, const Backend& target);

  // One work item of the iteration, as the target runs it.
  struct Item {
    int64_t seq_id = 0;
    int64_t computed = 0;    // positions in the target's KV (its chunk's cached_tokens)
    int64_t new_tokens = 0;  // a prefill chunk's tokens; a decode step's 1 + k
    bool decode = false;
    const BlockTable* block_table = nullptr;   // covers computed + new_tokens positions
    const SamplingParams* sampling = nullptr;  // decode: how proposals are picked
    Xoshiro256* rng = nullptr;                 // decode: the request's draws (sampling only)
  };
  struct Proposals {
    // Per item: its k draft tokens (none for prefill chunks and decodes of one token) and, for
    // a sampling request, the distribution each was drawn from (verify_draft's q; empty for
    // greedy requests, whose verdict needs none).
    std::vector<std::vector<int32_t>> tokens;
    std::vector<std::vector<Distribution>> distributions;
    int64_t passes = 0;    // draft forward passes
    double wall_s = 0;     // their wall time
    double device_s = -1;  // their device time; negative where the backend measures none
  };
  // Runs the draft over `items`: token_at(seq_id, position) gives a sequence's tokens (prompt,
  // then output) up to its last one.
  Proposals propose(std::span<const Item> items,
                    const std::function<int32_t(int64_t, int64_t)>& token_at);

  // A swap of the sequence's KV blocks (to host memory, or back into `blocks`, in position
  // order), made in the order the executor makes the target's: a block one swap gives up may be
  // the one the next fills.
  void swap(int64_t seq_id, bool to_host, std::span<const int32_t> blocks);
  // Lets go of a sequence's record (released, or its draft KV no longer valid).
  void forget(int64_t seq_id) {
    states_.erase(seq_id);
    swap_space_.forget(seq_id);
  }
  int64_t passes() const { return passes_; }

 private:
  struct State {
    int64_t written = 0;  // positions [0, written) hold the draft's KV, as far as it knows
    BlockTable blocks;    // the block table they were written through
  };
  // Where a decode item's first pass starts: the draft KV it has, bounded by the target's
  // computed positions and by the blocks that are still where they were.
  int64_t valid_positions(const State& state, const Item& item) const;

  Backend& draft_;
  std::unordered_map<int64_t, State> states_;
  KvSwapSpace swap_space_{draft_};  // swapped-out sequences' draft KV
  int64_t passes_ = 0;
};

}  // namespace inferlab::engine
