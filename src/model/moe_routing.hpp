#pragma once
// A mixture of experts' routing as measured, for the prediction. Tokens of one sequence route
// alike: on the engine's random-weight Qwen3-30B-A3B one sequence's 4096 prompt tokens reach 48 of
// the 128 experts (uniform routing would reach all), while 64 sequences' decode tokens reach the
// 126 that uniform routing expects (MEASUREMENTS §50). So the routing is kept as the experts one
// sequence of t tokens reaches, measured at a few t (the engine's profiles record every profiled
// pass's routing: engine/routing_stats.hpp; validation/moe_routing.py writes the fit split's
// single-sequence prefills into data/routing/<model>.json, which load_model attaches to the
// shipped model of that name: model_config.hpp's attach_moe_routing), and sequences draw their
// experts independently of each other.
// Without a measurement routing is taken as uniform.
#include <cstdint>
#include <span>

#include "model/model_config.hpp"

namespace inferlab {

// Experts one sequence of `tokens` tokens reaches in a layer: the measured points, linear in
// log(tokens) between them, the last one's beyond, top_k at one token; without a measurement,
// uniform routing's E (1 - (1 - k/E)^tokens).
double sequence_experts_reached(const ModelConfig& model, int64_t tokens);

// Expected experts `sequences` sequences of `tokens_per_sequence` tokens each reach, each
// sequence drawing its R = sequence_experts_reached experts independently: E (1 - (1 - R/E)^b).
// Uniform routing gives E (1 - (1 - k/E)^(b t)), as if every token drew alone.
double expected_active_experts(const ModelConfig& model, int64_t sequences,
                               int64_t tokens_per_sequence);
// The same for sequences of their own lengths: E (1 - prod over the sequences (1 - R(t_i)/E)).
double expected_active_experts(const ModelConfig& model,
                               std::span<const int64_t> tokens_per_sequence);

}  // namespace inferlab
