#include "engine/tp/shard.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <stdexcept>
#include <string>

#include "util/error.hpp"

namespace inferlab::engine {

namespace {

// Rows [begin, begin + count) of a row-major [rows, width] matrix.
template <typename T>
std::vector<T> slice_rows(const std::vector<T>& matrix, int64_t width, RowRange rows) {
  const auto first = matrix.begin() + rows.begin * width;
  return {first, first + rows.count * width};
}

// Columns [begin, begin + count) of every row of a row-major [rows, width] matrix.
template <typename T>
std::vector<T> slice_columns(const std::vector<T>& matrix, int64_t width, RowRange columns) {
  const int64_t rows = static_cast<int64_t>(matrix.size()) / width;
  std::vector<T> out(static_cast<size_t>(rows * columns.count));
  for (int64_t r = 0; r < rows; ++r) {
    std::copy_n(matrix.begin() + r * width + columns.begin, columns.count,
                out.begin() + r * columns.count);
  }
  return out;
}

// An even split (check_tensor_parallel has made sure it is).
RowRange even_part(int64_t size, int64_t rank, int64_t ranks) {
  return {rank * (size / ranks), size / ranks};
}

// A rank's share of one tensor, as the spec's shard rule says: `whole` is the whole model's
// tensor, `spec` the rank's (rank_config's shapes). The LM head's vocabulary rows are padded to
// spec.shape[0] with zero rows (zero logits, dropped when gathered).
template <typename T>
std::vector<T> shard_tensor(const std::vector<T>& whole, const WeightSpec& spec,
                            const ModelConfig& m, int64_t rank, int64_t ranks) {
  const int64_t width = spec.columns();
  switch (spec.part.shard) {
    case Shard::replicated:
      return whole;
    case Shard::rows:
      return slice_rows(whole, width, even_part(extent_size(spec.part.rows, m), rank, ranks));
    case Shard::columns: {
      const int64_t whole_width = extent_size(spec.part.columns, m);
      return slice_columns(whole, whole_width, even_part(whole_width, rank, ranks));
    }
    case Shard::vocab_rows: {
      std::vector<T> rows = slice_rows(whole, width, shard_rows(m.vocab_size, rank, ranks));
      rows.resize(static_cast<size_t>(spec.elements()), T{});
      return rows;
    }
  }
  return whole;
}

}  // namespace

void check_tensor_parallel(const ModelConfig& m, int64_t ranks) {
  if (ranks < 1 || ranks > 64) {
    throw InputError(fmt::format("--tp {}: the tensor-parallel degree must be in [1, 64]", ranks));
  }
  auto require_divides = [&](int64_t value, const char* what) {
    if (value % ranks != 0) {
      throw InputError(fmt::format("--tp {}: {} has {} {}, which do not split {} ways", ranks,
                                   m.name, value, what, ranks));
    }
  };
  require_divides(m.num_heads, "attention heads");
  require_divides(m.num_kv_heads, "KV heads");
  // (A mixture of experts splits every expert's channels, intermediate_size being one expert's.)
  require_divides(m.intermediate_size,
                  m.is_moe() ? "intermediate channels an expert" : "MLP intermediate channels");
  if (m.vocab_size < ranks) {
    throw InputError(
        fmt::format("--tp {}: {} has a vocabulary of {} tokens", ranks, m.name, m.vocab_size));
  }
}

RowRange shard_rows(int64_t size, int64_t rank, int64_t ranks) {
  if (ranks < 1 || rank < 0 || rank >= ranks) throw std::invalid_argument("shard_rows: bad rank");
  const int64_t base = size / ranks, extra = size % ranks;
  return {rank * base + std::min(rank, extra), base + (rank < extra ? 1 : 0)};
}

LlamaConfig rank_config(const LlamaConfig& config, int64_t ranks) {
  check_tensor_parallel(config.model, ranks);
  LlamaConfig local = config;
  local.model.num_heads /= ranks;
  local.model.num_kv_heads /= ranks;
  local.model.intermediate_size /= ranks;
  local.model.tie_word_embeddings = false;  // each rank holds its own LM-head rows
  return local;
}

LlamaWeights shard_weights(const LlamaWeights& weights, const LlamaConfig& config, int64_t rank,
                           int64_t ranks) {
  check_tensor_parallel(config.model, ranks);
  if (rank < 0 || rank >= ranks) throw std::invalid_argument("shard_weights: bad rank");
  const LlamaConfig local_config = rank_config(config, ranks);
  const std::vector<WeightSpec> local_specs = llama_weight_specs(local_config);
  LlamaWeights local;
  local.layers.resize(weights.layers.size());
  for (const WeightSpec& spec : local_specs) {
    // The whole model's tensor; a tied LM head is the embedding.
    const std::vector<float>& whole =
        spec.role == WeightRole::lm_head ? weights.output_embedding() : weights.at(spec);
    std::vector<float> part = shard_tensor(whole, spec, config.model, rank, ranks);
    // The CPU reference's LM head keeps the rank's real vocabulary rows only.
    if (spec.role == WeightRole::lm_head) {
      part.resize(static_cast<size_t>(shard_rows(config.model.vocab_size, rank, ranks).count *
                                      config.model.hidden_size));
    }
    local.set(spec, std::move(part));
  }
  return local;
}

int64_t vocab_shard_rows(int64_t vocab, int64_t ranks) {
  return (vocab + ranks - 1) / ranks;
}

TensorSource sharded_tensor_source(TensorSource source, const LlamaConfig& config, int64_t rank,
                                   int64_t ranks) {
  check_tensor_parallel(config.model, ranks);
  if (rank < 0 || rank >= ranks) throw std::invalid_argument("sharded_tensor_source: bad rank");
  std::map<std::string, WeightSpec> whole;
  for (const WeightSpec& spec : llama_weight_specs(config)) whole.emplace(spec.name, spec);
  return [source = std::move(source), whole = std::move(whole), m = config.model, rank,
          ranks](const WeightSpec& spec) -> std::vector<uint16_t> {
    std::string name = spec.name;
    if (spec.role == WeightRole::lm_head && m.tie_word_embeddings) {
      name = "model.embed_tokens.weight";
    }
    const auto found = whole.find(name);
    if (found == whole.end()) {
      throw std::invalid_argument("sharded_tensor_source: no tensor '" + spec.name + "'");
    }
    return shard_tensor(source(found->second), spec, m, rank, ranks);
  };
}

}  // namespace inferlab::engine
