#pragma once
// A check for CPU forward tests: a prompt fed in pieces (a chunked prefill of 9 and 5 tokens, then
// three decode steps) gives every position the logits one whole prefill gives it, within 1e-5.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "engine/cpu/cpu_backend.hpp"

namespace inferlab::engine::testing {

// tokens: 17 of them (the pieces' lengths add up to that).
inline void expect_pieces_equal_one_prefill(const LlamaConfig& config, const LlamaWeights& weights,
                                            const std::vector<int32_t>& tokens) {
  ASSERT_EQ(tokens.size(), 17u);
  CpuBackend whole(config, weights, 4, 16);
  CpuBackend pieces(config, weights, 4, 16);
  const SequenceChunk all{tokens, 0, {6, 2, 9, 0, 4}, true};
  const ForwardResult reference = whole.forward({{all}});
  int64_t done = 0;
  for (int64_t length : {9, 5, 1, 1, 1}) {
    SequenceChunk chunk{
        {tokens.begin() + done, tokens.begin() + done + length}, done, {5, 1, 3, 8, 12}, true};
    const ForwardResult result = pieces.forward({{chunk}});
    ASSERT_EQ(result.rows(0), length);
    for (int64_t r = 0; r < length; ++r) {
      const auto got = result.row(r), want = reference.row(done + r);
      double worst = 0;
      for (size_t i = 0; i < got.size(); ++i) {
        worst = std::max(worst, std::fabs(double{got[i]} - want[i]));
      }
      EXPECT_LE(worst, 1e-5) << "position " << done + r;
    }
    done += length;
  }
}

}  // namespace inferlab::engine::testing
