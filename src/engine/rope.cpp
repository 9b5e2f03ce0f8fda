#include "engine/rope.hpp"

#include <cmath>
#include <numbers>

namespace inferlab::engine {

std::vector<double> rope_inverse_frequencies(const RopeParams& rope, int64_t head_dim) {
  const int64_t half = head_dim / 2;
  std::vector<double> inv_freq(static_cast<size_t>(half));
  for (int64_t i = 0; i < half; ++i) {
    double freq =
        1.0 / std::pow(rope.theta, static_cast<double>(2 * i) / static_cast<double>(head_dim));
    if (rope.kind == RopeParams::Kind::linear) {
      freq /= rope.factor;
    } else if (rope.kind == RopeParams::Kind::llama3) {
      const double wavelen = 2 * std::numbers::pi / freq;
      const double low_freq_wavelen = rope.original_max_position_embeddings / rope.low_freq_factor;
      const double high_freq_wavelen =
          rope.original_max_position_embeddings / rope.high_freq_factor;
      if (wavelen > low_freq_wavelen) {
        freq /= rope.factor;
      } else if (wavelen >= high_freq_wavelen) {
        const double smooth =
            (rope.original_max_position_embeddings / wavelen - rope.low_freq_factor) /
            (rope.high_freq_factor - rope.low_freq_factor);
        freq = (1 - smooth) * freq / rope.factor + smooth * freq;
      }
    }
    inv_freq[static_cast<size_t>(i)] = freq;
  }
  return inv_freq;
}

void apply_rope(float* x, int64_t head_dim, int64_t position, const std::vector<double>& inv_freq) {
  const int64_t half = head_dim / 2;
  for (int64_t i = 0; i < half; ++i) {
    const double angle = static_cast<double>(position) * inv_freq[static_cast<size_t>(i)];
    const double c = std::cos(angle), s = std::sin(angle);
    const double x1 = x[i], x2 = x[i + half];
    x[i] = static_cast<float>(x1 * c - x2 * s);
    x[i + half] = static_cast<float>(x2 * c + x1 * s);
  }
}

}  // namespace inferlab::engine
