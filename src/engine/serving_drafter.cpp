#include "engine/serving_drafter.hpp"

#include <algorithm>
#include <chrono>
#include <string>

#include "engine/speculative.hpp"
#include "util/error.hpp"

namespace inferlab::engine {

BatchDrafter::BatchDrafter(Backend& draft, const Backend& target) : draft_(draft) {
  check_draft_vocabulary(target.config(), draft.config());
  const KvCacheLayout& d = draft.kv_layout();
  const KvCacheLayout& t = target.kv_layout();
  if (d.block_size != t.block_size || d.num_blocks < t.num_blocks) {
    throw InputError("the draft model's KV cache (" + std::to_string(d.num_blocks) + " blocks of " +
                     std::to_string(d.block_size) +
                     " tokens) must have the target's block size and at least its blocks (" +
                     std::to_string(t.num_blocks) + " of " + std::to_string(t.block_size) +
                     "): the scheduler's block tables serve both");
  }
}

int64_t BatchDrafter::valid_positions(const State& state, const Item& item) const {
  const BlockTable& now = *item.block_table;
  size_t same = 0;
  while (same < state.blocks.size() && same < now.size() && state.blocks[same] == now[same]) {
    ++same;
  }
  const int64_t unmoved = static_cast<int64_t>(same) * draft_.kv_layout().block_size;
  return std::min({state.written, item.computed, unmoved});
}

void BatchDrafter::swap(int64_t seq_id, bool to_host, std::span<const int32_t> blocks) {
  if (to_host) {
    swap_space_.swap_out(seq_id, blocks);
    return;
  }
  if (!swap_space_.swap_in(seq_id, blocks)) {  // nothing of the draft's went out: it starts over
    states_.erase(seq_id);
    return;
  }
  // The positions it had are where the target's went (swap-in covers the computed positions).
  const auto state = states_.find(seq_id);
  if (state != states_.end()) state->second.blocks.assign(blocks.begin(), blocks.end());
}

BatchDrafter::Proposals BatchDrafter::propose(
    std::span<const Item> items, const std::function<int32_t(int64_t, int64_t)>& token_at) {
  const auto start = std::chrono::steady_clock::now();
  Proposals out;
  out.tokens.resize(items.size());
  out.distributions.resize(items.size());
  std::vector<int64_t> drafts(items.size(), 0);
  int64_t rounds = 0;  // passes this iteration needs
  bool host_sampling = false;

  // The first pass: prefill chunks as the target runs them, and each drafting sequence's tokens
  // from the end of its draft KV to its last token.
  ForwardBatch batch;
  std::vector<size_t> item_of;  // the item of each of the batch's sequences
  for (size_t i = 0; i < items.size(); ++i) {
    const Item& item = items[i];
    State& state = states_[item.seq_id];
    SequenceChunk chunk;
    chunk.block_table = *item.block_table;
    int64_t last = 0;  // one past the last position the chunk runs
    if (!item.decode) {
      // The cached positions are an earlier chunk of this prompt or prefix-cache hits: the draft
      // wrote them when the target did (preemption by recompute starts over here too).
      chunk.cached_tokens = item.computed;
      last = item.computed + item.new_tokens;
      state.written = last;
    } else {
      drafts[i] = item.new_tokens - 1;
      if (drafts[i] < 1) continue;  // nothing to draft: the target's last step of it
      chunk.cached_tokens = valid_positions(state, item);
      last = item.computed + 1;
      // The passes write up to the last proposal but one: position computed + k − 1.
      state.written = item.computed + drafts[i];
      rounds = std::max(rounds, drafts[i]);
      host_sampling = host_sampling || sampling_draws(*item.sampling);
    }
    for (int64_t p = chunk.cached_tokens; p < last; ++p) {
      chunk.tokens.push_back(token_at(item.seq_id, p));
    }
    state.blocks = *item.block_table;
    batch.sequences.push_back(std::move(chunk));
    item_of.push_back(i);
  }
  if (batch.sequences.empty()) return out;

  bool device_timed = true;
  for (int64_t round = 0; round < std::max<int64_t>(rounds, 1); ++round) {
    if (round > 0) {  // each drafting sequence's previous proposal
      batch.sequences.clear();
      item_of.clear();
      for (size_t i = 0; i < items.size(); ++i) {
        if (drafts[i] <= round) continue;
        SequenceChunk chunk;
        chunk.tokens = {out.tokens[i].back()};
        chunk.cached_tokens = items[i].computed + round;
        chunk.block_table = *items[i].block_table;
        batch.sequences.push_back(std::move(chunk));
        item_of.push_back(i);
      }
    }
    // Sampling requests need the draft's whole distribution (logits to the host); greedy ones
    // alone take the argmax where the logits are (a GPU's sampler, its decode graphs).
    std::vector<int32_t> picked;
    ForwardResult result;
    if (host_sampling) {
      result = draft_.forward(batch);
    } else {
      const std::vector<SampleSpec> greedy(batch.sequences.size());
      picked = draft_.forward_sample(batch, greedy);
    }
    ++out.passes;
    const double device_s = draft_.last_forward_device_s();
    device_timed = device_timed && device_s >= 0;
    if (device_timed) out.device_s = std::max(out.device_s, 0.0) + device_s;
    for (size_t b = 0; b < item_of.size(); ++b) {
      const size_t i = item_of[b];
      if (drafts[i] <= round) continue;  // a prefill chunk: its KV was the point
      if (!host_sampling) {
        out.tokens[i].push_back(picked[b]);
        continue;
      }
      const bool draws = sampling_draws(*items[i].sampling);
      Distribution q;
      out.tokens[i].push_back(
          sample_token(result.last(b), *items[i].sampling, *items[i].rng, draws ? &q : nullptr));
      if (draws) out.distributions[i].push_back(std::move(q));
    }
  }
  if (!device_timed) out.device_s = -1;
  passes_ += out.passes;
  out.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return out;
}

}  // namespace inferlab::engine
