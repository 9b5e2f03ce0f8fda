#include "engine/engine_bench.hpp"

#include <algorithm>
#include <chrono>
#include <numeric>
#include <string>

#include "util/error.hpp"
#include "util/rng.hpp"

namespace inferlab::engine {

TimingStats timing_stats(std::vector<double> samples_s) {
  TimingStats stats;
  if (samples_s.empty()) return stats;
  std::sort(samples_s.begin(), samples_s.end());
  const size_t n = samples_s.size();
  auto quantile = [&](double q) {
    const double at = q * static_cast<double>(n - 1);
    const auto low = static_cast<size_t>(at);
    const size_t high = std::min(low + 1, n - 1);
    return samples_s[low] + (at - static_cast<double>(low)) * (samples_s[high] - samples_s[low]);
  };
  stats.median_s = quantile(0.5);
  stats.p10_s = quantile(0.1);
  stats.p90_s = quantile(0.9);
  stats.min_s = samples_s.front();
  stats.max_s = samples_s.back();
  stats.mean_s = std::accumulate(samples_s.begin(), samples_s.end(), 0.0) / static_cast<double>(n);
  stats.samples = static_cast<int64_t>(n);
  return stats;
}

namespace {

struct Timed {
  std::vector<int32_t> ids;
  double device_s, wall_s;
};

Timed timed_pass(Backend& backend, const ForwardBatch& batch,
                 const std::vector<SampleSpec>& greedy) {
  const auto start = std::chrono::steady_clock::now();
  std::vector<int32_t> ids = backend.forward_sample(batch, greedy);
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double device = backend.last_forward_device_s();
  return {std::move(ids), device >= 0 ? device : wall, wall};
}

void check(const BenchOptions& o, const Backend& backend) {
  const auto& layout = backend.kv_layout();
  const int64_t context = backend.config().model.max_position_embeddings;
  if (o.batch < 1 || o.input_tokens < 1 || o.output_tokens < 1 || o.repeats < 1 || o.warmup < 0) {
    throw InputError("bench: batch, input, output and repeats must be at least 1");
  }
  if (context > 0 && o.input_tokens + o.output_tokens > context) {
    throw InputError("bench: input (" + std::to_string(o.input_tokens) + ") plus output (" +
                     std::to_string(o.output_tokens) + ") is longer than the model's context of " +
                     std::to_string(context) + " tokens");
  }
  const int64_t blocks = o.batch * layout.blocks_for(o.input_tokens + o.output_tokens);
  if (blocks > layout.num_blocks) {
    throw InputError("bench: " + std::to_string(o.batch) + " sequences of " +
                     std::to_string(o.input_tokens + o.output_tokens) + " tokens need " +
                     std::to_string(blocks) + " KV blocks; the cache holds " +
                     std::to_string(layout.num_blocks));
  }
}

}  // namespace

BenchResult run_engine_bench(Backend& backend, const BenchOptions& o) {
  check(o, backend);
  const auto& layout = backend.kv_layout();
  const int64_t vocab = backend.config().model.vocab_size;
  BlockAllocator allocator(layout.num_blocks);
  Xoshiro256 rng(o.seed);

  ForwardBatch prefill;
  for (int64_t s = 0; s < o.batch; ++s) {
    SequenceChunk chunk;
    for (int64_t t = 0; t < o.input_tokens; ++t) {
      chunk.tokens.push_back(static_cast<int32_t>(rng.next() % static_cast<uint64_t>(vocab)));
    }
    allocator.grow(chunk.block_table, o.input_tokens + o.output_tokens, layout.block_size);
    prefill.sequences.push_back(std::move(chunk));
  }
  const std::vector<SampleSpec> greedy(static_cast<size_t>(o.batch));

  auto decode_from = [&](const std::vector<int32_t>& first_ids) {
    ForwardBatch decode = prefill;
    for (size_t s = 0; s < decode.sequences.size(); ++s) {
      decode.sequences[s].cached_tokens = o.input_tokens;
      decode.sequences[s].tokens.assign(1, first_ids[s]);
    }
    return decode;
  };

  backend.set_profiling(false);
  for (int64_t i = 0; i < o.warmup; ++i) {
    ForwardBatch decode = decode_from(timed_pass(backend, prefill, greedy).ids);
    for (int step = 0; step < 2 && step < o.output_tokens - 1; ++step) {
      timed_pass(backend, decode, greedy);
    }
  }

  BenchResult result;
  result.device_timed = backend.last_forward_device_s() >= 0;
  std::vector<double> prefill_s, prefill_wall, decode_s, decode_wall;
  std::vector<int32_t> ids;
  for (int64_t r = 0; r < o.repeats; ++r) {
    Timed pass = timed_pass(backend, prefill, greedy);
    prefill_s.push_back(pass.device_s);
    prefill_wall.push_back(pass.wall_s);
    ids = std::move(pass.ids);
  }
  ForwardBatch decode = decode_from(ids);
  for (int64_t step = 1; step < o.output_tokens; ++step) {
    Timed pass = timed_pass(backend, decode, greedy);
    decode_s.push_back(pass.device_s);
    decode_wall.push_back(pass.wall_s);
    for (size_t s = 0; s < decode.sequences.size(); ++s) {
      decode.sequences[s].cached_tokens += 1;
      decode.sequences[s].tokens.assign(1, pass.ids[s]);
    }
  }

  if (o.profile_kernels) {
    backend.set_profiling(true);
    timed_pass(backend, prefill, greedy);
    result.prefill_kernels = backend.last_forward_profile();
    result.prefill_routing = backend.last_forward_routing();
    ForwardBatch middle = decode_from(ids);
    for (auto& s : middle.sequences) s.cached_tokens = o.input_tokens + (o.output_tokens - 1) / 2;
    timed_pass(backend, middle, greedy);
    result.decode_kernels = backend.last_forward_profile();
    result.decode_routing = backend.last_forward_routing();
    backend.set_profiling(false);
  }
  for (auto& s : prefill.sequences) allocator.release(s.block_table);

  result.prefill = timing_stats(prefill_s);
  result.prefill_wall = timing_stats(prefill_wall);
  result.decode_step = timing_stats(decode_s);
  result.decode_step_wall = timing_stats(decode_wall);
  result.ttft_s = result.prefill.median_s;
  result.tpot_s = result.decode_step.mean_s;
  result.e2e_s = result.ttft_s + static_cast<double>(o.output_tokens - 1) * result.tpot_s;
  result.decode_tokens_per_s =
      result.tpot_s > 0 ? static_cast<double>(o.batch) / result.tpot_s : 0.0;
  result.prefill_tokens_per_s =
      static_cast<double>(o.batch * o.input_tokens) / result.prefill.median_s;
  result.kv_cache_tokens = layout.slots();
  result.kv_bytes_per_token = 2 * layout.elements_per_token();
  return result;
}

}  // namespace inferlab::engine
