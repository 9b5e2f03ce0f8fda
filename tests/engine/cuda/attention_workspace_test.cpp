// The CUDA backend's attention workspace holds the decode kernel's split partials for every pass
// it sends down the by-token path (a speculative verification of k + 1 tokens, a draft's
// catch-up), not only for its sequences: sized for one sequence at a short context, a 5-token
// verification fell back to the tiled prefill kernel (MEASUREMENTS §46: 0.544 ms a verification
// on a 174M model of context 1024, 0.460-0.463 with the by-token kernel). Host arithmetic only:
// runs without a GPU.
#include <gtest/gtest.h>

#ifdef INFERLAB_ENGINE_HAVE_CUDA
#include "engine/cuda/attention.hpp"
#include "engine/cuda/cuda_backend_impl.hpp"
#include "model/engine_decode_plan.hpp"

namespace inferlab::engine::cuda {
namespace {

// The trained target of issue 37: 12 query heads of 64, context 1024.
ModelConfig small_target() {
  ModelConfig m;
  m.hidden_size = 768;
  m.num_heads = 12;
  m.num_kv_heads = 4;
  m.head_dim = 64;
  m.num_layers = 12;
  m.intermediate_size = 2048;
  m.vocab_size = 128256;
  m.max_position_embeddings = 1024;
  return m;
}

TEST(CudaAttentionWorkspace, OneSequenceAtAShortContextStillVerifiesByToken) {
  const ModelConfig m = small_target();
  CudaBackendOptions o;
  o.max_sequences = 1;
  o.max_batch_tokens = 4096;
  // The sequences' sizing alone: 1 sequence x 16 splits of 64 positions = 16 rows; a verification
  // of 5 tokens at the 512 bound needs 5 x 8 = 40.
  const size_t sequences_only = paged_attention_workspace_bytes(1, 12, 64, 1024);
  const size_t verification = paged_attention_workspace_bytes(5, 12, 64, 512);
  ASSERT_LT(sequences_only, verification);
  EXPECT_EQ(sequences_only * 40 / 16, verification);
  const size_t sized = attention_workspace_bytes(m, o, 1024);
  // Every by-token pass the forward can make (up to 64 tokens, any context up to the model's).
  for (int tokens = 1; tokens <= kTokenViewMaxTokens; ++tokens) {
    for (int context : {1, 64, 256, 512, 1000, 1024}) {
      EXPECT_LE(paged_attention_workspace_bytes(tokens, 12, 64, context), sized)
          << tokens << " tokens at " << context;
    }
  }
  EXPECT_EQ(sized, paged_attention_workspace_bytes(64, 12, 64, 1024));
}

TEST(CudaAttentionWorkspace, ManySequencesKeepTheirOwnSizing) {
  const ModelConfig m = small_target();
  CudaBackendOptions o;
  o.max_sequences = 256;
  o.max_batch_tokens = 4096;
  EXPECT_EQ(attention_workspace_bytes(m, o, 1024),
            paged_attention_workspace_bytes(256, 12, 64, 1024));
  // Naive attention never goes by token: its own sizing only.
  o.naive_attention = true;
  o.max_sequences = 1;
  EXPECT_EQ(attention_workspace_bytes(m, o, 1024),
            paged_attention_workspace_bytes(1, 12, 64, 1024, /*naive=*/true));
}

}  // namespace
}  // namespace inferlab::engine::cuda
#else
TEST(CudaAttentionWorkspace, NeedsACudaBuild) {
  GTEST_SKIP() << "built without CUDA";
}
#endif
