// Backend::forward_sample_rows, the host's way (what the CPU reference and the TP groups on the
// CPU run, and the reference the CUDA backend's device sampling is held to): one token per logit
// row, worked out by hand on logits a stub backend gives; and on the CPU reference, each row's
// argmax of its own forward() for a batch mixing every-row and last-row chunks.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "engine/backend.hpp"
#include "engine/cpu/cpu_backend.hpp"
#include "engine/init_weights.hpp"
#include "test_support.hpp"

namespace inferlab::engine {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

// Returns `rows`, in order, as the logits of a batch's logit rows (as many as it asks for), and
// counts its passes; everything else it refuses.
class FixedLogitsBackend final : public Backend {
 public:
  explicit FixedLogitsBackend(std::vector<std::vector<float>> rows) : rows_(std::move(rows)) {
    config_.model.vocab_size = static_cast<int64_t>(rows_.front().size());
  }
  const LlamaConfig& config() const override { return config_; }
  const KvCacheLayout& kv_layout() const override { return layout_; }
  ForwardResult forward(const ForwardBatch& batch) override {
    ++passes;
    ForwardResult result;
    result.vocab_size = config_.model.vocab_size;
    result.first_row = {0};
    size_t next = 0;
    for (const SequenceChunk& chunk : batch.sequences) {
      const size_t rows = chunk.all_logits ? chunk.tokens.size() : 1;
      for (size_t r = 0; r < rows; ++r, ++next) {
        const std::vector<float>& row = rows_.at(next);
        result.logits.insert(result.logits.end(), row.begin(), row.end());
      }
      result.first_row.push_back(static_cast<int64_t>(next));
    }
    return result;
  }
  void fill_kv_cache_random(uint64_t) override { throw std::logic_error("not here"); }
  int64_t kv_block_host_bytes() const override { return 0; }
  std::unique_ptr<KvHostCopy> copy_kv_blocks_to_host(std::span<const int32_t>) override {
    throw std::logic_error("not here");
  }
  void copy_kv_blocks_from_host(std::span<const int32_t>, std::span<const std::byte>) override {
    throw std::logic_error("not here");
  }
  int passes = 0;

 private:
  std::vector<std::vector<float>> rows_;
  LlamaConfig config_;
  KvCacheLayout layout_;
};

// A verify-shaped chunk of 3 tokens with every row's logits, then a chunk of 2 with its last
// row only: 4 rows.
ForwardBatch three_and_one() {
  ForwardBatch batch;
  batch.sequences.push_back({{1, 2, 3}, 5, {0}, true});
  batch.sequences.push_back({{4, 5}, 0, {1}, false});
  return batch;
}

TEST(BackendSampleRows, ArgmaxOfEveryRowLowestIdAmongTiesAndNaNNeverWins) {
  FixedLogitsBackend backend({
      {0.0f, 2.0f, 5.0f, 5.0f},     // a tie at 5: id 2, the lower
      {kNaN, -1.0f, -3.0f, kNaN},   // NaN loses to every number: id 1
      {-kInf, -kInf, -kInf, 0.5f},  // id 3
      {7.0f, 7.0f, 7.0f, 7.0f},     // all equal: id 0
  });
  const ForwardBatch batch = three_and_one();
  EXPECT_EQ(logit_rows(batch), 4);
  EXPECT_EQ(backend.forward_argmax_rows(batch), (std::vector<int32_t>{2, 1, 3, 0}));
  EXPECT_EQ(backend.passes, 1);
}

TEST(BackendSampleRows, EachRowIsPickedAsItsOwnSpecSays) {
  // Row 1 at temperature 1: p(1) = 3/4, p(0) = 1/4, most likely first; a draw of 0.5 falls in
  // token 1's 0.75 and 0.8 past it, in token 0's. Row 2 at top_k 1 is its argmax, no draw.
  const float log3 = std::log(3.0f);
  FixedLogitsBackend backend({
      {1.0f, 0.0f},
      {0.0f, log3},
      {0.0f, log3},
      {4.0f, 9.0f},
  });
  SamplingParams warm;
  warm.temperature = 1.0;
  SamplingParams top1 = warm;
  top1.top_k = 1;
  const std::vector<SampleSpec> specs = {{{}, 0.0}, {warm, 0.5}, {warm, 0.8}, {top1, 0.99}};
  EXPECT_EQ(backend.forward_sample_rows(three_and_one(), specs),
            (std::vector<int32_t>{0, 1, 0, 1}));
}

TEST(BackendSampleRows, RefusesAnythingButOneSpecPerRow) {
  FixedLogitsBackend backend({{1.0f, 0.0f}, {1.0f, 0.0f}, {1.0f, 0.0f}, {1.0f, 0.0f}});
  const std::vector<SampleSpec> per_sequence(2), one_short(3);
  EXPECT_THROW(backend.forward_sample_rows(three_and_one(), per_sequence), std::invalid_argument);
  EXPECT_THROW(backend.forward_sample_rows(three_and_one(), one_short), std::invalid_argument);
  EXPECT_EQ(backend.passes, 0);  // refused before the pass
}

TEST(BackendSampleRows, CpuReferenceGivesTheArgmaxOfItsOwnLogits) {
  const LlamaConfig config =
      parse_llama_config(testing::tiny_llama_config(97, 256), "tiny", "test");
  CpuBackend cpu(config, random_llama_weights(config, 3), 16, 8);
  ForwardBatch batch;
  batch.sequences.push_back({{5, 9, 13, 5, 9}, 0, {0}, true});
  batch.sequences.push_back({{1, 2, 3, 4, 5, 6, 7}, 0, {2}, false});
  // The same slots rewritten with the same values: the same logits both times.
  const ForwardResult logits = cpu.forward(batch);
  const std::vector<int32_t> ids = cpu.forward_argmax_rows(batch);
  ASSERT_EQ(ids.size(), 6u);
  for (int64_t r = 0; r < 6; ++r) {
    EXPECT_EQ(ids[static_cast<size_t>(r)], argmax(logits.row(r))) << "row " << r;
  }
}

}  // namespace
}  // namespace inferlab::engine
