// The CUDA layer kernels against the CPU references (engine/cpu/ops, engine/rope) on
// bf16-rounded inputs. Without a GPU the tests skip.
#include <gtest/gtest.h>

#include "engine/cuda_backend.hpp"

#ifdef INFERLAB_ENGINE_HAVE_CUDA
#include <cmath>
#include <random>
#include <vector>

#include "engine/bf16.hpp"
#include "engine/cpu/ops.hpp"
#include "engine/cuda/cuda_check.hpp"
#include "engine/cuda/layer_kernels.hpp"
#include "engine/rope.hpp"

namespace inferlab::engine {
namespace {

using cuda::bf16;
using cuda::DeviceBuffer;

#define REQUIRE_GPU() \
  if (!cuda_device_available()) GTEST_SKIP() << "no CUDA GPU"

// Random values already rounded to bf16 (what the kernels read), as fp32 and as bits.
struct Bf16Data {
  std::vector<float> values;
  std::vector<uint16_t> bits;
};
Bf16Data random_bf16(size_t n, unsigned seed, float mean = 0, float spread = 1) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(mean, spread);
  Bf16Data data;
  for (size_t i = 0; i < n; ++i) {
    data.bits.push_back(float_to_bf16(normal(rng)));
    data.values.push_back(bf16_to_float(data.bits.back()));
  }
  return data;
}

DeviceBuffer<bf16> to_device(const std::vector<uint16_t>& bits) {
  DeviceBuffer<bf16> buffer(bits.size());
  buffer.upload(reinterpret_cast<const bf16*>(bits.data()), bits.size());
  return buffer;
}

std::vector<float> to_host(const DeviceBuffer<bf16>& buffer) {
  std::vector<uint16_t> bits(buffer.size());
  INFERLAB_CUDA_CHECK(cudaDeviceSynchronize());
  buffer.download(reinterpret_cast<bf16*>(bits.data()), bits.size());
  std::vector<float> values;
  for (uint16_t b : bits) values.push_back(bf16_to_float(b));
  return values;
}

// The kernels round intermediate values to bf16 as transformers does (a few roundings of
// relative size 2^-8 each); against the fp32 reference that allows ~1.5% of the value plus a
// small absolute term for values near zero.
void expect_close_bf16(const std::vector<float>& got, const std::vector<float>& want,
                       double relative = 0.016, double absolute = 2e-3) {
  ASSERT_EQ(got.size(), want.size());
  int bad = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::abs(got[i] - want[i]) > absolute + relative * std::abs(want[i])) {
      if (++bad <= 5) ADD_FAILURE() << "at " << i << ": " << got[i] << " vs " << want[i];
    }
  }
  EXPECT_EQ(bad, 0);
}

TEST(CudaLayerKernels, RmsNormAndFusedAddMatchTheReference) {
  REQUIRE_GPU();
  for (int hidden : {64, 2048, 4096, 100}) {  // 100: the unvectorized path
    const int rows = 5;
    auto x = random_bf16(static_cast<size_t>(rows * hidden), 1, 0.5f, 2.0f);
    auto delta = random_bf16(x.values.size(), 2);
    auto weight = random_bf16(static_cast<size_t>(hidden), 3, 1.0f, 0.1f);
    auto dx = to_device(x.bits), dd = to_device(delta.bits), dw = to_device(weight.bits);
    DeviceBuffer<bf16> out(x.values.size());
    cuda::rms_norm(dx.data(), dw.data(), rows, hidden, 1e-5f, out.data(), nullptr);
    std::vector<float> want(x.values.size());
    for (int r = 0; r < rows; ++r) {
      cpu::rms_norm(&x.values[r * hidden], weight.values.data(), hidden, 1e-5, &want[r * hidden]);
    }
    expect_close_bf16(to_host(out), want);

    cuda::add_rms_norm(dx.data(), dd.data(), dw.data(), rows, hidden, 1e-5f, out.data(), nullptr);
    std::vector<float> sum(x.values.size());
    for (size_t i = 0; i < sum.size(); ++i)
      sum[i] = bf16_to_float(float_to_bf16(x.values[i] + delta.values[i]));
    for (int r = 0; r < rows; ++r) {
      cpu::rms_norm(&sum[r * hidden], weight.values.data(), hidden, 1e-5, &want[r * hidden]);
    }
    EXPECT_EQ(to_host(dx), sum) << "the residual holds the bf16-rounded sum, hidden " << hidden;
    expect_close_bf16(to_host(out), want);
  }
}

// Several blocks per token (4 heads each), a partial last block, head_dim 64 and 128.
void check_rope(int heads, int kv_heads, int d) {
  const int tokens = 3;
  const int row = (heads + 2 * kv_heads) * d;
  auto qkv = random_bf16(static_cast<size_t>(tokens * row), 4);
  RopeParams rope;
  rope.kind = RopeParams::Kind::llama3;
  rope.theta = 500000;
  rope.factor = 32;
  rope.original_max_position_embeddings = 8192;
  const auto inv_freq_d = rope_inverse_frequencies(rope, d);
  std::vector<float> inv_freq(inv_freq_d.begin(), inv_freq_d.end());
  const std::vector<int32_t> positions = {0, 7, 3000}, slots = {5, 0, 9};
  auto dq = to_device(qkv.bits);
  DeviceBuffer<float> df(inv_freq.size());
  df.upload(inv_freq.data(), inv_freq.size());
  DeviceBuffer<int32_t> dp(3), ds(3);
  dp.upload(positions.data(), 3);
  ds.upload(slots.data(), 3);
  const size_t cache = 10 * kv_heads * d;
  DeviceBuffer<bf16> k_cache(cache), v_cache(cache);
  cuda::rope_kv_write(dq.data(), tokens, heads, kv_heads, d, dp.data(), ds.data(), df.data(),
                      {inferlab::DType::bf16, k_cache.data(), v_cache.data(), nullptr, nullptr},
                      nullptr);
  const auto got = to_host(dq), keys = to_host(k_cache), values = to_host(v_cache);
  for (int t = 0; t < tokens; ++t) {
    std::vector<float> want(qkv.values.begin() + t * row, qkv.values.begin() + (t + 1) * row);
    for (int h = 0; h < heads + kv_heads; ++h)
      apply_rope(&want[h * d], d, positions[t], inv_freq_d);
    std::vector<float> got_q(got.begin() + t * row, got.begin() + t * row + heads * d);
    // bf16 cos/sin and three roundings: ~2^-7 relative per element, plus the bf16 angle error.
    expect_close_bf16(got_q, std::vector<float>(want.begin(), want.begin() + heads * d), 0.02,
                      0.03);
    std::vector<float> got_k(keys.begin() + slots[t] * kv_heads * d,
                             keys.begin() + (slots[t] + 1) * kv_heads * d);
    expect_close_bf16(
        got_k, std::vector<float>(want.begin() + heads * d, want.begin() + (heads + kv_heads) * d),
        0.02, 0.03);
    for (int i = 0; i < kv_heads * d; ++i) {
      ASSERT_EQ(values[slots[t] * kv_heads * d + i],
                qkv.values[t * row + (heads + kv_heads) * d + i]);
    }
  }
}

TEST(CudaLayerKernels, RopeWritesRotatedQueriesAndTheCacheSlots) {
  REQUIRE_GPU();
  check_rope(4, 2, 128);
  check_rope(32, 8, 128);  // Llama 3 8B: 10 blocks per token
  check_rope(6, 6, 64);
}

TEST(CudaLayerKernels, SiluMulReadsBothHalvesOfTheFusedOutput) {
  REQUIRE_GPU();
  for (int inter : {8192, 44}) {
    const int tokens = 3;
    auto gu = random_bf16(static_cast<size_t>(tokens * 2 * inter), 5, 0, 3);
    auto dgu = to_device(gu.bits);
    DeviceBuffer<bf16> out(static_cast<size_t>(tokens * inter));
    cuda::silu_mul_halves(dgu.data(), tokens, inter, out.data(), nullptr);
    std::vector<float> want;
    for (int t = 0; t < tokens; ++t) {
      std::vector<float> gate(gu.values.begin() + t * 2 * inter,
                              gu.values.begin() + t * 2 * inter + inter);
      cpu::silu_mul(gate.data(), &gu.values[t * 2 * inter + inter], inter);
      want.insert(want.end(), gate.begin(), gate.end());
    }
    expect_close_bf16(to_host(out), want);
  }
}

TEST(CudaLayerKernels, EmbeddingAndRowGatherCopyRows) {
  REQUIRE_GPU();
  const int vocab = 50, hidden = 72;
  auto table = random_bf16(static_cast<size_t>(vocab * hidden), 6);
  auto dt = to_device(table.bits);
  const std::vector<int32_t> ids = {49, 0, 17, 17};
  DeviceBuffer<int32_t> di(ids.size());
  di.upload(ids.data(), ids.size());
  DeviceBuffer<bf16> out(ids.size() * hidden);
  cuda::embedding_gather(dt.data(), di.data(), 4, hidden, out.data(), nullptr);
  auto got = to_host(out);
  for (size_t t = 0; t < ids.size(); ++t) {
    for (int i = 0; i < hidden; ++i)
      ASSERT_EQ(got[t * hidden + i], table.values[ids[t] * hidden + i]);
  }
  // The LM head's row gather: rows 3 and 0 of that output (ids 17 and 49).
  const std::vector<int32_t> pick = {3, 0};
  DeviceBuffer<int32_t> dpick(2);
  dpick.upload(pick.data(), 2);
  DeviceBuffer<bf16> rows(2 * hidden);
  cuda::gather_rows(out.data(), dpick.data(), 2, hidden, rows.data(), nullptr);
  auto gathered = to_host(rows);
  for (int i = 0; i < hidden; ++i) {
    ASSERT_EQ(gathered[i], table.values[17 * hidden + i]);
    ASSERT_EQ(gathered[hidden + i], table.values[49 * hidden + i]);
  }
}

}  // namespace
}  // namespace inferlab::engine

#else
TEST(CudaLayerKernels, NeedsACudaBuild) {
  GTEST_SKIP() << "built without CUDA";
}
#endif
