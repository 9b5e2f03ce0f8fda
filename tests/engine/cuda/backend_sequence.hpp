#pragma once
// The sequence of passes the CUDA backend tests run on a GPU backend and the CPU reference side
// by side (cuda_head_dim_backend_test.cpp, cuda_moe_backend_test.cpp): a prefill of two prompts
// (every row's logits: 327 rows, more than one LM-head chunk), a mixed batch (a decode token, a
// chunk of 20 after 280 cached tokens, a new prompt), 4 decode steps of three sequences, a
// speculative verification of 4, 5 and 3 tokens, and optionally one sequence's single token.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "engine/backend.hpp"
#include "engine/cuda/logits_agreement.hpp"
#include "engine/sampling.hpp"

namespace inferlab::engine {

// `count` token ids below 1000, a different run for each seed.
inline std::vector<int32_t> sequence_tokens(int count, int seed) {
  std::vector<int32_t> ids;
  for (int i = 0; i < count; ++i) ids.push_back((seed * 7919 + i * 104729) % 1000);
  return ids;
}

inline Agreement run_sequence(Backend& gpu, Backend& cpu, bool single_token_step = false) {
  Agreement agreement;
  // Sequence 1's blocks: 20 of the pool, not in order, skipping those of sequences 0 and 2.
  const BlockTable seq0 = {9, 3, 40, 41}, seq2 = {50};
  BlockTable seq1;
  for (int32_t b = 30; seq1.size() < 20; --b) {
    if (b != 9 && b != 3) seq1.push_back(b);
  }
  ForwardBatch prefill;
  prefill.sequences.push_back({sequence_tokens(47, 1), 0, seq0, true});
  prefill.sequences.push_back({sequence_tokens(280, 2), 0, seq1, true});
  compare(gpu.forward(prefill), cpu.forward(prefill), agreement);
  ForwardBatch mixed;
  mixed.sequences.push_back({{17}, 47, seq0, true});
  mixed.sequences.push_back({sequence_tokens(20, 3), 280, seq1, true});
  mixed.sequences.push_back({sequence_tokens(5, 4), 0, seq2, true});
  compare(gpu.forward(mixed), cpu.forward(mixed), agreement);
  ForwardBatch decode;
  decode.sequences.push_back({{3}, 48, seq0, false});
  decode.sequences.push_back({{999}, 300, seq1, false});
  decode.sequences.push_back({{0}, 5, seq2, false});
  for (int step = 0; step < 4; ++step) {
    compare(gpu.forward(decode), cpu.forward(decode), agreement);
    for (auto& s : decode.sequences) s.cached_tokens += 1;
  }
  ForwardBatch verify;
  verify.sequences.push_back({{5, 6, 7, 8}, 52, seq0, true});
  verify.sequences.push_back({sequence_tokens(5, 6), 304, seq1, true});
  verify.sequences.push_back({{9, 10, 11}, 9, seq2, true});
  compare(gpu.forward(verify), cpu.forward(verify), agreement);
  if (single_token_step) {
    ForwardBatch single;
    single.sequences.push_back({{42}, 12, seq2, true});
    compare(gpu.forward(single), cpu.forward(single), agreement);
  }
  return agreement;
}

// Greedy decode of `batch` (prompts, all_logits off) on an eager backend and on one that replays
// CUDA graphs, `steps` steps after the prefill, each step feeding back the eager pick: both must
// pick the same ids at every step. The blocks of each sequence must hold its prompt and steps + 1
// more tokens.
inline void expect_graph_replay_matches_eager(Backend& eager, Backend& graphed, ForwardBatch batch,
                                              int steps, const std::string& what) {
  const std::vector<SampleSpec> greedy(batch.sequences.size(), SampleSpec{{0.0, 0, 1.0}, 0.0});
  std::vector<int32_t> a = eager.forward_sample(batch, greedy);
  std::vector<int32_t> b = graphed.forward_sample(batch, greedy);
  for (int step = 0; step < steps; ++step) {
    ASSERT_EQ(a, b) << what << ", step " << step;
    for (size_t s = 0; s < batch.sequences.size(); ++s) {
      auto& seq = batch.sequences[s];
      seq.cached_tokens += static_cast<int64_t>(seq.tokens.size());
      seq.tokens = {a[s]};
    }
    a = eager.forward_sample(batch, greedy);
    b = graphed.forward_sample(batch, greedy);
  }
  EXPECT_EQ(a, b) << what;
}

}  // namespace inferlab::engine
