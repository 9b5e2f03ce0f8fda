// The Hopper prefill kernel (attention_prefill_hopper.cu: wgmma + TMA, FlashAttention-3 style)
// against the CPU reference (cpu::paged_attention over an fp32 cache holding the same
// bf16-rounded values) and against the mma.sync kernel (detail::launch_prefill). Skipped unless
// the GPU has compute capability 9.0 and the binary's sm_90a image loads.
//
// Built to be read from one GPU run: every check poisons the output, draws fresh random data
// (the seed is printed; INFERLAB_TEST_SEED=<n> repeats a run), runs both schedules of the kernel
// twice (the two runs must be bit-identical), checks that every output it owns was written and
// that the one-query sequences it must skip were not, and prints one line per schedule:
//   [hopper] <case> <schedule> seed=… rel_l2_vs_cpu=… max_abs_vs_cpu=… bad_vs_cpu=…/…
//            max_abs_vs_mma=… bad_vs_mma=… unwritten=… nonfinite=… deterministic=…
// On a failure it also prints where the bad outputs sit: by 16-row warp slice of the 128-row
// query tile (which consumer warp) and by 8-dim group (which accumulator columns), which tells a
// layout or descriptor error from a masking or pipeline one.
#ifdef INFERLAB_ENGINE_HAVE_CUDA
#include "engine/cuda/attention_hopper.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "engine/bf16.hpp"
#include "engine/cpu/ops.hpp"
#include "engine/cuda/attention_kernels.hpp"
#include "engine/cuda/cuda_check.hpp"
#include "engine/cuda_backend.hpp"
#include "engine/kv_cache.hpp"

namespace inferlab::engine {
namespace {

using cuda::DeviceBuffer;
using cuda::detail::HopperPrefillSchedule;

constexpr uint16_t kPoison = 0xFFFF;  // a NaN no kernel writes (they round NaN to 0x7FFF)

struct SeqSpec {
  int context_len = 0;  // tokens in all, the new ones included
  int query_len = 0;    // new tokens (already in the cache)
};

struct AttnCase {
  std::string name;
  int num_heads = 0;
  int num_kv_heads = 0;
  int head_dim = 128;
  int block_size = 16;
  int sliding_window = 0;
  std::vector<SeqSpec> seqs;
  bool skip_single_queries = true;
  bool nan_outside_contexts = false;  // NaN in every cache slot no context covers
  int cpu_every = 1;                  // CPU reference for every n-th new token (and the last 3)
};

uint32_t base_seed() {
  static const uint32_t seed = [] {
    if (const char* env = std::getenv("INFERLAB_TEST_SEED")) {
      return static_cast<uint32_t>(std::strtoul(env, nullptr, 10));
    }
    return static_cast<uint32_t>(std::random_device{}());
  }();
  return seed;
}

// One batch on the host: bf16 bits of the cache (every slot random, or NaN outside contexts),
// shuffled block tables, queries in rows as wide as a fused QKV output.
struct Batch {
  Batch(const AttnCase& spec, uint32_t seed) : c(spec), seed(seed), rng(seed) {
    layout = KvCacheLayout{1, spec.num_kv_heads, spec.head_dim, spec.block_size, 3};
    for (const SeqSpec& s : spec.seqs) layout.num_blocks += layout.blocks_for(s.context_len);
    row = layout.num_kv_heads * layout.head_dim;
    k_bits.resize(static_cast<size_t>(layout.slots() * row));
    v_bits.resize(k_bits.size());
    std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
    for (size_t i = 0; i < k_bits.size(); ++i) {
      k_bits[i] = float_to_bf16(unit(rng));
      v_bits[i] = float_to_bf16(unit(rng));
    }
    std::vector<int32_t> ids(static_cast<size_t>(layout.num_blocks));
    std::iota(ids.begin(), ids.end(), 0);
    std::shuffle(ids.begin(), ids.end(), rng);
    size_t next = 0;
    query_start.push_back(0);
    std::vector<char> used(static_cast<size_t>(layout.slots()), 0);
    for (const SeqSpec& s : spec.seqs) {
      BlockTable table;
      for (int64_t b = 0; b < layout.blocks_for(s.context_len); ++b) table.push_back(ids[next++]);
      for (int p = 0; p < s.context_len; ++p)
        used[static_cast<size_t>(kv_slot(table, spec.block_size, p))] = 1;
      table_stride = std::max(table_stride, static_cast<int>(table.size()) + 1);
      tables.push_back(table);
      query_start.push_back(query_start.back() + s.query_len);
      context_lens.push_back(s.context_len);
      max_query_len = std::max(max_query_len, s.query_len);
      max_context_len = std::max(max_context_len, s.context_len);
    }
    if (spec.nan_outside_contexts) {
      for (int64_t slot = 0; slot < layout.slots(); ++slot) {
        if (used[static_cast<size_t>(slot)] != 0) continue;
        std::fill_n(k_bits.begin() + slot * row, row, uint16_t{0x7FC0});
        std::fill_n(v_bits.begin() + slot * row, row, uint16_t{0x7FC0});
      }
    }
    // Entries past a sequence's blocks are -1: using one would read outside the cache.
    flat_tables.assign(tables.size() * static_cast<size_t>(table_stride), -1);
    for (size_t s = 0; s < tables.size(); ++s) {
      std::copy(tables[s].begin(), tables[s].end(),
                flat_tables.begin() + static_cast<ptrdiff_t>(s * table_stride));
    }
    num_tokens = query_start.back();
    q_row_stride = (spec.num_heads + 2 * spec.num_kv_heads) * spec.head_dim;
    q_bits.resize(static_cast<size_t>(num_tokens) * q_row_stride);
    for (uint16_t& q : q_bits) q = float_to_bf16(unit(rng));
  }

  int64_t slot(int seq, int position) const {
    return kv_slot(tables[static_cast<size_t>(seq)], layout.block_size, position);
  }
  uint16_t* key(int64_t slot, int kv_head) { return &k_bits[slot * row + kv_head * c.head_dim]; }
  uint16_t* value(int64_t slot, int kv_head) { return &v_bits[slot * row + kv_head * c.head_dim]; }
  uint16_t* query(int token, int head) {
    return &q_bits[static_cast<size_t>(token) * q_row_stride + head * c.head_dim];
  }
  bool owned(int seq) const {  // the kernel writes this sequence's rows
    return !(c.skip_single_queries && c.seqs[static_cast<size_t>(seq)].query_len == 1);
  }

  AttnCase c;
  uint32_t seed;
  std::mt19937 rng;
  KvCacheLayout layout;
  int64_t row = 0;
  std::vector<uint16_t> k_bits, v_bits, q_bits;
  std::vector<BlockTable> tables;
  std::vector<int32_t> flat_tables, query_start, context_lens;
  int table_stride = 1, num_tokens = 0, q_row_stride = 0, max_query_len = 0, max_context_len = 0;
};

// The CPU reference for the sampled tokens of owned sequences; `has_ref[token]` marks them.
std::vector<float> run_cpu(const Batch& b, std::vector<char>& has_ref) {
  CpuKvCache cache(b.layout);
  for (int64_t slot = 0; slot < b.layout.slots(); ++slot) {
    for (int64_t i = 0; i < b.row; ++i) {
      cache.key(0, slot)[i] = bf16_to_float(b.k_bits[static_cast<size_t>(slot * b.row + i)]);
      cache.value(0, slot)[i] = bf16_to_float(b.v_bits[static_cast<size_t>(slot * b.row + i)]);
    }
  }
  const cpu::AttentionShape shape{b.c.num_heads, b.c.num_kv_heads, b.c.head_dim,
                                  b.c.sliding_window};
  const size_t width = static_cast<size_t>(b.c.num_heads) * b.c.head_dim;
  std::vector<float> result(static_cast<size_t>(b.num_tokens) * width, 0.0f), q(width);
  has_ref.assign(static_cast<size_t>(b.num_tokens), 0);
  for (size_t s = 0; s < b.c.seqs.size(); ++s) {
    if (!b.owned(static_cast<int>(s))) continue;
    const SeqSpec& seq = b.c.seqs[s];
    for (int j = 0; j < seq.query_len; ++j) {
      if (j % b.c.cpu_every != 0 && j < seq.query_len - 3) continue;
      const int token = b.query_start[s] + j;
      for (size_t i = 0; i < width; ++i) {
        q[i] = bf16_to_float(b.q_bits[static_cast<size_t>(token) * b.q_row_stride + i]);
      }
      cpu::paged_attention(q.data(), seq.context_len - seq.query_len + j, cache, 0, b.tables[s],
                           shape, result.data() + token * width);
      has_ref[static_cast<size_t>(token)] = 1;
    }
  }
  return result;
}

enum class Kernel { kHopperOverlapped, kHopperSerial, kMmaSync };

const char* kernel_name(Kernel k) {
  return k == Kernel::kHopperOverlapped ? "overlapped"
         : k == Kernel::kHopperSerial   ? "serial"
                                        : "mma.sync";
}

int device_cc() {
  int device = 0, major = 0, minor = 0;
  INFERLAB_CUDA_CHECK(cudaGetDevice(&device));
  INFERLAB_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  INFERLAB_CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
  return major * 10 + minor;
}

int sm_count() {
  int device = 0, count = 0;
  INFERLAB_CUDA_CHECK(cudaGetDevice(&device));
  INFERLAB_CUDA_CHECK(cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, device));
  return count;
}

// The batch on the device; run() poisons the output, launches one kernel and returns the bits.
struct DeviceBatch {
  explicit DeviceBatch(const Batch& b)
      : q(b.q_bits.size()),
        k(b.k_bits.size()),
        v(b.v_bits.size()),
        out(static_cast<size_t>(b.num_tokens) * b.c.num_heads * b.c.head_dim),
        tables(b.flat_tables.size()),
        starts(b.query_start.size()),
        lens(b.context_lens.size()) {
    q.upload(b.q_bits.data(), b.q_bits.size());
    k.upload(b.k_bits.data(), b.k_bits.size());
    v.upload(b.v_bits.data(), b.v_bits.size());
    tables.upload(b.flat_tables.data(), b.flat_tables.size());
    starts.upload(b.query_start.data(), b.query_start.size());
    lens.upload(b.context_lens.data(), b.context_lens.size());
    p.q = reinterpret_cast<const __nv_bfloat16*>(q.data());
    p.q_row_stride = b.q_row_stride;
    p.cache = {DType::bf16, k.data(), v.data(), nullptr, nullptr};
    p.block_tables = tables.data();
    p.block_table_stride = b.table_stride;
    p.query_start = starts.data();
    p.context_lens = lens.data();
    p.num_seqs = static_cast<int>(b.c.seqs.size());
    p.num_tokens = b.num_tokens;
    p.max_query_len = b.max_query_len;
    p.max_context_len = b.max_context_len;
    p.skip_single_queries = b.c.skip_single_queries;
    p.num_heads = b.c.num_heads;
    p.num_kv_heads = b.c.num_kv_heads;
    p.head_dim = b.c.head_dim;
    p.block_size = b.c.block_size;
    p.sliding_window = b.c.sliding_window;
    p.softmax_scale = 1.0f / std::sqrt(static_cast<float>(b.c.head_dim));
    p.out = reinterpret_cast<__nv_bfloat16*>(out.data());
  }

  std::vector<uint16_t> run(Kernel kernel) {
    INFERLAB_CUDA_CHECK(cudaMemset(out.data(), 0xFF, out.bytes()));
    if (kernel == Kernel::kMmaSync) {
      cuda::detail::launch_prefill(p, sm_count(), nullptr);
    } else {
      cuda::detail::launch_prefill_hopper(p, sm_count(), nullptr,
                                          kernel == Kernel::kHopperOverlapped
                                              ? HopperPrefillSchedule::kOverlapped
                                              : HopperPrefillSchedule::kSerial);
    }
    INFERLAB_CUDA_CHECK(cudaDeviceSynchronize());
    if (kernel != Kernel::kMmaSync) {
      cuda::detail::HopperWatchdogReport r;
      if (cuda::detail::hopper_prefill_watchdog(&r)) {
        ADD_FAILURE() << "pipeline watchdog: CTA (" << r.block[0] << "," << r.block[1] << ","
                      << r.block[2] << ") thread " << r.thread << " waited > 8 s on mbarrier "
                      << r.barrier << " parity " << r.parity
                      << " (0 Q, 1 V tail, 2-3 full K, 4-5 full V, 6-7 empty K, 8-9 empty V)";
      }
    }
    std::vector<uint16_t> bits(out.size());
    out.download(bits.data(), bits.size());
    return bits;
  }

  DeviceBuffer<uint16_t> q, k, v, out;
  DeviceBuffer<int32_t> tables, starts, lens;
  cuda::PagedAttentionParams p;
};

// err ≤ 2e-3 + 1e-2 |ref| per element, as attention_test.cpp bounds the mma.sync kernel against
// the CPU (bf16 output rounding, bf16 softmax weights before P·V); between two GPU kernels, each
// within that of the exact value, twice that.
struct Comparison {
  double max_abs = 0, sq_err = 0, sq_ref = 0;
  int64_t bad = 0, compared = 0;
  std::vector<int64_t> bad_by_warp_slice = std::vector<int64_t>(8, 0);
  std::vector<int64_t> bad_by_dim_group = std::vector<int64_t>(16, 0);
  std::string examples;
};

Comparison compare(const Batch& b, const std::vector<uint16_t>& gpu, const std::vector<float>& ref,
                   const std::vector<char>& rows, double abs_tol, double rel_tol) {
  Comparison c;
  const size_t width = static_cast<size_t>(b.c.num_heads) * b.c.head_dim;
  for (size_t s = 0; s < b.c.seqs.size(); ++s) {
    for (int j = 0; j < b.c.seqs[s].query_len; ++j) {
      const size_t token = static_cast<size_t>(b.query_start[s] + j);
      if (rows[token] == 0) continue;
      for (size_t i = 0; i < width; ++i) {
        const double g = bf16_to_float(gpu[token * width + i]), r = ref[token * width + i];
        const double err = std::abs(g - r);
        c.max_abs = std::isnan(err) ? INFINITY : std::max(c.max_abs, err);
        c.sq_err += std::isnan(err) ? INFINITY : err * err;
        c.sq_ref += r * r;
        ++c.compared;
        if (err <= abs_tol + rel_tol * std::abs(r)) continue;
        const int dim = static_cast<int>(i % b.c.head_dim);
        ++c.bad_by_warp_slice[static_cast<size_t>((j % 128) / 16)];
        ++c.bad_by_dim_group[static_cast<size_t>(std::min(dim / 8, 15))];
        if (++c.bad <= 6) {
          const int position = b.c.seqs[s].context_len - b.c.seqs[s].query_len + j;
          c.examples += "\n  seq " + std::to_string(s) + " token " + std::to_string(j) +
                        " (position " + std::to_string(position) + ") head " +
                        std::to_string(i / b.c.head_dim) + " dim " + std::to_string(dim) +
                        ": gpu " + std::to_string(g) + " want " + std::to_string(r);
        }
      }
    }
  }
  return c;
}

std::string histogram(const std::vector<int64_t>& counts) {
  std::string s;
  for (int64_t n : counts) s += " " + std::to_string(n);
  return s;
}

// Runs both Hopper schedules (twice each) and the mma.sync kernel on one batch and checks all.
void check_batch(const Batch& b) {
  SCOPED_TRACE(b.c.name + " seed " + std::to_string(b.seed));
  std::vector<char> has_ref;
  const std::vector<float> ref = run_cpu(b, has_ref);
  DeviceBatch dev(b);
  const std::vector<uint16_t> mma_bits = dev.run(Kernel::kMmaSync);
  std::vector<float> mma(mma_bits.size());
  for (size_t i = 0; i < mma.size(); ++i) mma[i] = bf16_to_float(mma_bits[i]);
  std::vector<char> owned_rows(static_cast<size_t>(b.num_tokens), 0);
  for (size_t s = 0; s < b.c.seqs.size(); ++s) {
    if (!b.owned(static_cast<int>(s))) continue;
    for (int t = b.query_start[s]; t < b.query_start[s + 1]; ++t)
      owned_rows[static_cast<size_t>(t)] = 1;
  }
  const size_t width = static_cast<size_t>(b.c.num_heads) * b.c.head_dim;
  for (Kernel kernel : {Kernel::kHopperOverlapped, Kernel::kHopperSerial}) {
    const std::vector<uint16_t> bits = dev.run(kernel);
    const bool deterministic = dev.run(kernel) == bits;
    int64_t unwritten = 0, nonfinite = 0, touched_skipped = 0;
    for (size_t t = 0; t < owned_rows.size(); ++t) {
      for (size_t i = t * width; i < (t + 1) * width; ++i) {
        if (owned_rows[t] == 0) {
          touched_skipped += bits[i] != kPoison ? 1 : 0;
        } else if (bits[i] == kPoison) {
          ++unwritten;
        } else if (!std::isfinite(bf16_to_float(bits[i]))) {
          ++nonfinite;
        }
      }
    }
    const Comparison cpu = compare(b, bits, ref, has_ref, 2e-3, 1e-2);
    const Comparison vs_mma = compare(b, bits, mma, owned_rows, 4e-3, 2e-2);
    const double rel_l2 = std::sqrt(cpu.sq_err / std::max(cpu.sq_ref, 1e-30));
    std::printf(
        "[hopper] %-28s %-10s seed=%u rel_l2_vs_cpu=%.2e max_abs_vs_cpu=%.2e bad_vs_cpu=%lld/%lld "
        "max_abs_vs_mma=%.2e bad_vs_mma=%lld unwritten=%lld nonfinite=%lld skipped_touched=%lld "
        "deterministic=%d\n",
        b.c.name.c_str(), kernel_name(kernel), b.seed, rel_l2, cpu.max_abs,
        static_cast<long long>(cpu.bad), static_cast<long long>(cpu.compared), vs_mma.max_abs,
        static_cast<long long>(vs_mma.bad), static_cast<long long>(unwritten),
        static_cast<long long>(nonfinite), static_cast<long long>(touched_skipped),
        deterministic ? 1 : 0);
    std::fflush(stdout);
    SCOPED_TRACE(kernel_name(kernel));
    EXPECT_EQ(unwritten, 0) << "outputs left poisoned";
    EXPECT_EQ(nonfinite, 0) << "NaN or Inf outputs";
    EXPECT_EQ(touched_skipped, 0) << "wrote rows of one-query sequences it must skip";
    EXPECT_TRUE(deterministic) << "two runs differ: a race";
    EXPECT_LT(rel_l2, 1e-2) << "‖gpu − cpu‖ / ‖cpu‖";
    EXPECT_EQ(cpu.bad, 0) << "vs CPU; bad by 16-row warp slice of the 128-row tile:"
                          << histogram(cpu.bad_by_warp_slice)
                          << "; by 8-dim group:" << histogram(cpu.bad_by_dim_group) << cpu.examples;
    EXPECT_EQ(vs_mma.bad, 0) << "vs mma.sync; by warp slice:" << histogram(vs_mma.bad_by_warp_slice)
                             << "; by dim group:" << histogram(vs_mma.bad_by_dim_group)
                             << vs_mma.examples;
  }
}

void check_case(const AttnCase& spec) {
  const Batch b(spec, base_seed() ^ static_cast<uint32_t>(std::hash<std::string>{}(spec.name)));
  check_batch(b);
}

class CudaAttentionHopper : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cuda_device_available()) GTEST_SKIP() << "no CUDA GPU";
    cc_ = device_cc();
    if (cc_ != 90) GTEST_SKIP() << "the Hopper kernel needs compute capability 9.0, not " << cc_;
    if (!cuda::detail::hopper_prefill_supported(probe_params(), cc_)) {
      GTEST_SKIP() << "compute capability 9.0 but the kernel's sm_90a image does not load";
    }
  }
  // Parameters the kernel supports (pointers aligned, bf16, head_dim 128).
  static cuda::PagedAttentionParams probe_params() {
    alignas(16) static uint16_t dummy[8];
    cuda::PagedAttentionParams p;
    p.q = reinterpret_cast<const __nv_bfloat16*>(dummy);
    p.cache = {DType::bf16, dummy, dummy, nullptr, nullptr};
    p.out = reinterpret_cast<__nv_bfloat16*>(dummy);
    p.num_heads = 32;
    p.num_kv_heads = 8;
    p.head_dim = 128;
    p.block_size = 16;
    p.q_row_stride = 48 * 128;
    return p;
  }
  int cc_ = 0;
};

// Resources of the four kernel instances; spills would show as local memory. On a 9.0 GPU the
// image must load (a missing sm_90a image is a build error, not a reason to skip).
TEST(CudaAttentionHopperBuild, KernelImageAndResources) {
  if (!cuda_device_available()) GTEST_SKIP() << "no CUDA GPU";
  const int cc = device_cc();
  std::printf("[hopper] device %s, compute capability %d\n", cuda_device_name().c_str(), cc);
  if (cc != 90) GTEST_SKIP() << "compute capability " << cc << ": the kernel is sm_90a only";
  for (int d : {128, 64}) {
    for (auto schedule : {HopperPrefillSchedule::kOverlapped, HopperPrefillSchedule::kSerial}) {
      cudaFuncAttributes a{};
      ASSERT_TRUE(cuda::detail::hopper_prefill_attributes(d, schedule, &a))
          << "the sm_90a image did not load on a 9.0 GPU";
      std::printf(
          "[hopper] head_dim %d %s: %d registers, %zu B local, max %d threads, ptx %d, binary %d\n",
          d, schedule == HopperPrefillSchedule::kOverlapped ? "overlapped" : "serial", a.numRegs,
          a.localSizeBytes, a.maxThreadsPerBlock, a.ptxVersion, a.binaryVersion);
      EXPECT_EQ(a.localSizeBytes, 0u) << "spills";
    }
  }
}

// Q·Kᵀ alone: every query is twice one visible key (K entries ±1, so that key scores 2 √d, far
// above the rest), so its output is about that key's value. A failure here and not in
// UniformWeights points at the score GEMM (Q or K descriptors, swizzle, key order).
TEST_F(CudaAttentionHopper, EachQueryPicksOneKey) {
  AttnCase spec{"picks_one_key", 8, 2, 128, 16, 0, {{300, 300}, {700, 150}, {130, 130}}};
  Batch b(spec, base_seed() + 1);
  std::bernoulli_distribution coin(0.5);
  for (uint16_t& k : b.k_bits) k = float_to_bf16(coin(b.rng) ? 1.0f : -1.0f);
  for (size_t s = 0; s < spec.seqs.size(); ++s) {
    const int prefix = spec.seqs[s].context_len - spec.seqs[s].query_len;
    for (int j = 0; j < spec.seqs[s].query_len; ++j) {
      const int target = std::uniform_int_distribution<int>(0, prefix + j)(b.rng);
      for (int h = 0; h < spec.num_heads; ++h) {
        const uint16_t* key = b.key(b.slot(static_cast<int>(s), target), h / 4);
        uint16_t* q = b.query(b.query_start[s] + j, h);
        for (int i = 0; i < spec.head_dim; ++i) q[i] = float_to_bf16(2.0f * bf16_to_float(key[i]));
      }
    }
  }
  check_batch(b);
}

// P·V alone: all keys zero, so every visible key weighs the same and a query's output is the mean
// of the values up to its position. A failure here points at the value GEMM (V descriptor, P
// fragments), the masking or the running sums.
TEST_F(CudaAttentionHopper, UniformWeightsAverageValues) {
  AttnCase spec{"uniform_weights", 8, 2, 128, 16, 0, {{300, 300}, {700, 150}, {130, 130}}};
  Batch b(spec, base_seed() + 2);
  std::fill(b.k_bits.begin(), b.k_bits.end(), uint16_t{0});
  check_batch(b);
}

TEST_F(CudaAttentionHopper, PrefillGroups1And4And8) {
  const std::vector<SeqSpec> seqs = {{300, 300}, {129, 129}, {65, 65}, {2, 2}, {256, 256}};
  check_case({"prefill_group1", 4, 4, 128, 16, 0, seqs});
  check_case({"prefill_group4", 16, 4, 128, 16, 0, seqs});
  check_case({"prefill_group8", 16, 2, 128, 16, 0, seqs});
}

TEST_F(CudaAttentionHopper, CachedPrefixPlusChunk) {
  check_case({"prefix_chunk",
              8,
              2,
              128,
              16,
              0,
              {{1000, 200}, {513, 257}, {4100, 130}, {64, 64}},
              true,
              false,
              3});
}

TEST_F(CudaAttentionHopper, Head64) {
  check_case({"head64_group3", 6, 2, 64, 16, 0, {{500, 100}, {260, 130}, {77, 77}}});
  check_case({"head64_group1_block32", 4, 4, 64, 32, 0, {{200, 200}, {90, 3}, {33, 33}}});
}

// Pages smaller than, equal to and larger than the 128-key tile, through shuffled tables.
TEST_F(CudaAttentionHopper, BlockSizes) {
  for (int block : {16, 32, 64, 128, 256}) {
    check_case({"block" + std::to_string(block),
                8,
                2,
                128,
                block,
                0,
                {{700, 300}, {300, 300}, {129, 40}, {1000, 5}}});
  }
}

TEST_F(CudaAttentionHopper, SlidingWindow) {
  check_case({"window50", 8, 4, 128, 16, 50, {{300, 120}, {40, 40}, {130, 65}}});
  check_case({"window128_tile_edge", 4, 2, 128, 16, 128, {{512, 512}, {190, 2}}, true, false, 2});
  check_case({"window300_prefix", 8, 2, 64, 32, 300, {{2000, 400}, {301, 301}}, true, false, 3});
}

// One-token sequences are the decode kernel's (skip_single_queries): left untouched; without
// the flag the kernel computes them too.
TEST_F(CudaAttentionHopper, MixedBatchSingleQueries) {
  const std::vector<SeqSpec> seqs = {{300, 37}, {129, 1}, {1000, 200}, {17, 1}, {17, 5}};
  check_case({"mixed_skip", 8, 2, 128, 16, 0, seqs, true});
  check_case({"mixed_compute", 8, 2, 128, 16, 0, seqs, false});
}

// Cache slots no context covers hold NaN (the engine's cache is uninitialised memory): the
// kernel loads whole pages, so it must keep the tail of the last page out of P·V.
TEST_F(CudaAttentionHopper, NaNOutsideContextsIgnored) {
  check_case({"nan_outside",
              8,
              2,
              128,
              16,
              0,
              {{300, 300}, {77, 77}, {1000, 13}, {129, 129}},
              true,
              true});
  check_case({"nan_outside_block64", 8, 2, 128, 64, 0, {{300, 300}, {77, 77}}, true, true});
  check_case({"nan_outside_head64", 4, 2, 64, 32, 0, {{150, 150}, {33, 33}}, true, true});
}

// Many sequences of random lengths in one launch: many CTAs, every tile shape.
TEST_F(CudaAttentionHopper, ManyRandomSequences) {
  std::mt19937 rng(base_seed() + 3);
  std::vector<SeqSpec> seqs;
  for (int i = 0; i < 40; ++i) {
    const int query = 2 + static_cast<int>(rng() % 300);
    seqs.push_back({query + static_cast<int>(rng() % 3 == 0 ? rng() % 600 : 0), query});
  }
  check_case({"many_random", 8, 2, 128, 16, 0, seqs, true, false, 4});
}

// Llama 3 8B attention shapes at benchmark length; the CPU checks every 41st token.
TEST_F(CudaAttentionHopper, Llama8BShapes2048) {
  check_case({"llama8b_2048", 32, 8, 128, 16, 0, {{2048, 2048}}, true, false, 41});
  check_case({"llama8b_prefix2048_chunk512", 32, 8, 128, 16, 0, {{2560, 512}}, true, false, 29});
}

}  // namespace
}  // namespace inferlab::engine
#endif  // INFERLAB_ENGINE_HAVE_CUDA
