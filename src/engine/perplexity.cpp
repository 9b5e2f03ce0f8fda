#include "engine/perplexity.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "engine/kv_cache.hpp"
#include "engine/teacher_forced.hpp"

namespace inferlab::engine {

namespace {

// −log softmax(row)[token], in double.
double negative_log_likelihood(std::span<const float> row, int32_t token) {
  double top = row[0];
  for (float l : row) top = std::max<double>(top, l);
  double sum = 0;
  for (float l : row) sum += std::exp(static_cast<double>(l) - top);
  return top + std::log(sum) - row[static_cast<size_t>(token)];
}

}  // namespace

PerplexityResult perplexity(Backend& backend, std::span<const int32_t> ids, int64_t context,
                            int64_t stride) {
  const auto count = static_cast<int64_t>(ids.size());
  if (count < 2) throw std::invalid_argument("perplexity needs at least 2 tokens");
  if (context < 2 || stride < 1 || stride > context) {
    throw std::invalid_argument("perplexity: need 2 <= context and 1 <= stride <= context");
  }
  const int64_t vocab = backend.config().model.vocab_size;
  const int64_t block_size = backend.kv_layout().block_size;
  PerplexityResult result;
  double nll_sum = 0;
  int64_t scored_until = 1;  // the first token has nothing before it
  for (int64_t begin = 0;; begin += stride) {
    const int64_t end = std::min(begin + context, count);
    const std::span<const int32_t> window =
        ids.subspan(static_cast<size_t>(begin), static_cast<size_t>(end - begin));
    BlockAllocator allocator(backend.kv_layout().num_blocks);
    BlockTable table;
    if (!allocator.grow(table, end - begin, block_size)) {
      throw std::invalid_argument("perplexity: the window is larger than the KV pool");
    }
    const std::vector<float> logits =
        teacher_forced_logits(backend, window, end - begin, std::move(table));
    for (int64_t p = std::max(scored_until, begin + 1); p < end; ++p) {
      // Row p − begin − 1 of the window predicts token p.
      const std::span<const float> row(logits.data() + (p - begin - 1) * vocab,
                                       static_cast<size_t>(vocab));
      nll_sum += negative_log_likelihood(row, ids[static_cast<size_t>(p)]);
      ++result.tokens;
    }
    scored_until = end;
    ++result.windows;
    if (end == count) break;
  }
  result.nll_mean = nll_sum / static_cast<double>(result.tokens);
  result.perplexity = std::exp(result.nll_mean);
  return result;
}

}  // namespace inferlab::engine
