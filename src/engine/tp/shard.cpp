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
  if (m.is_moe() && ranks > 1) {
    throw InputError(fmt::format(
        "--tp {}: {} is a mixture of experts; tensor parallelism of MoE models is not supported "
        "yet (run it with --tp 1)",
        ranks, m.name));
  }
  require_divides(m.num_heads, "attention heads");
  require_divides(m.num_kv_heads, "KV heads");
  require_divides(m.intermediate_size, "MLP intermediate channels");
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
  const ModelConfig& m = config.model;
  check_tensor_parallel(m, ranks);
  if (rank < 0 || rank >= ranks) throw std::invalid_argument("shard_weights: bad rank");
  const int64_t hidden = m.hidden_size;
  const RowRange q_rows = even_part(m.q_dim(), rank, ranks);
  const RowRange kv_rows = even_part(m.kv_dim(), rank, ranks);
  const RowRange mlp_rows = even_part(m.intermediate_size, rank, ranks);

  LlamaWeights local;
  local.embed_tokens = weights.embed_tokens;
  local.final_norm = weights.final_norm;
  local.lm_head =
      slice_rows(weights.output_embedding(), hidden, shard_rows(m.vocab_size, rank, ranks));
  local.layers.reserve(weights.layers.size());
  for (const LayerWeights& w : weights.layers) {
    LayerWeights l;
    l.input_layernorm = w.input_layernorm;
    l.post_attention_layernorm = w.post_attention_layernorm;
    l.q_proj = slice_rows(w.q_proj, hidden, q_rows);
    l.k_proj = slice_rows(w.k_proj, hidden, kv_rows);
    l.v_proj = slice_rows(w.v_proj, hidden, kv_rows);
    if (!w.q_bias.empty()) {
      l.q_bias = slice_rows(w.q_bias, 1, q_rows);
      l.k_bias = slice_rows(w.k_bias, 1, kv_rows);
      l.v_bias = slice_rows(w.v_bias, 1, kv_rows);
    }
    l.o_proj = slice_columns(w.o_proj, m.q_dim(), q_rows);
    l.gate_proj = slice_rows(w.gate_proj, hidden, mlp_rows);
    l.up_proj = slice_rows(w.up_proj, hidden, mlp_rows);
    l.down_proj = slice_columns(w.down_proj, m.intermediate_size, mlp_rows);
    local.layers.push_back(std::move(l));
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
    std::vector<uint16_t> bits = source(found->second);
    const int64_t hidden = m.hidden_size;
    switch (spec.role) {
      case WeightRole::q_proj:
      case WeightRole::q_bias:
        return slice_rows(bits, spec.shape.size() > 1 ? hidden : 1,
                          even_part(m.q_dim(), rank, ranks));
      case WeightRole::k_proj:
      case WeightRole::v_proj:
      case WeightRole::k_bias:
      case WeightRole::v_bias:
        return slice_rows(bits, spec.shape.size() > 1 ? hidden : 1,
                          even_part(m.kv_dim(), rank, ranks));
      case WeightRole::gate_proj:
      case WeightRole::up_proj:
        return slice_rows(bits, hidden, even_part(m.intermediate_size, rank, ranks));
      case WeightRole::o_proj:
        return slice_columns(bits, m.q_dim(), even_part(m.q_dim(), rank, ranks));
      case WeightRole::down_proj:
        return slice_columns(bits, m.intermediate_size,
                             even_part(m.intermediate_size, rank, ranks));
      case WeightRole::lm_head: {
        std::vector<uint16_t> rows =
            slice_rows(bits, hidden, shard_rows(m.vocab_size, rank, ranks));
        rows.resize(static_cast<size_t>(spec.elements()), 0);  // padding rows: zero logits
        return rows;
      }
      default:
        return bits;  // replicated: the embedding and the norms
    }
  };
}

}  // namespace inferlab::engine
