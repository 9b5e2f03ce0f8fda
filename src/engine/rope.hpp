#pragma once
#include <cstdint>
#include <vector>

#include "engine/llama_config.hpp"

namespace inferlab::engine {

// The rotary inverse frequencies inv_freq[i], i < head_dim / 2, as transformers computes them
// (in double here): theta^(-2i / head_dim), then
//  - linear: divided by factor;
//  - llama3: with wavelen = 2π / inv_freq, low = original / low_freq_factor and
//    high = original / high_freq_factor: wavelen > low → inv_freq / factor; wavelen < high →
//    unchanged; in between → (1 - s) · inv_freq / factor + s · inv_freq with
//    s = (original / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor).
std::vector<double> rope_inverse_frequencies(const RopeParams& rope, int64_t head_dim);

// Rotates one head vector in place for `position`, in the rotate-half layout of HF Llama:
// pairs (x[i], x[i + d/2]) turn by the angle position · inv_freq[i].
void apply_rope(float* x, int64_t head_dim, int64_t position, const std::vector<double>& inv_freq);

}  // namespace inferlab::engine
