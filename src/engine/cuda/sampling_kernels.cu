// Sampling on the GPU without sorting: one CTA per row finds, by radix search over the logits'
// order keys, the few positions of the CPU's sorted order that matter (the top_k cutoff, the
// top_p cutoff and the pick), instead of sorting the whole vocabulary.
//
// Why no sort is needed: the CPU sorts by double probability, descending, ties by lower id. For
// finite logits p = exp((l - max) / T) is strictly increasing in l in double (float logits have
// 24 bits, double 53), so that order is "logit descending, lower id first" -- a total order on
// (logit, id) that needs no probability at all. Every quantity the CPU computes is a prefix sum
// in that order: top_k keeps the first K; top_p keeps the first n whose mass reaches
// top_p · (kept mass); the pick is the first position whose running mass exceeds u · (kept mass).
// Each is "the first position where a running count or mass reaches a target", which a radix
// search finds from histograms (count and mass per digit of the order key) without ordering
// anything: 10 + 11 + 11 bits, stopping early once the crossing digit holds one element. Equal
// logits have equal keys and equal masses, so inside the last digit the crossing is arithmetic
// and only the pick needs its id (the r-th lowest id with that key, one more pass).
//
// Masses are fp32 exp((l - max) / T) turned into 2^-44 fixed point (uint64): integer sums are
// exact and associative, so shared-memory atomics give the same histogram in any order (the
// result is deterministic, graph replays included) and every pass of a search sees the same
// totals. p <= 1 and the max token has p = 1 exactly, so every target is >= 2^44 units and the
// quantum is 2^-44 of the kept mass or less; a vocabulary of up to 2^19 sums below 2^63.
//
// Where it can differ from the CPU (double exp, double sums): only when u · (kept mass), or
// top_p · (mass after top_k), lies within rounding (fp32 exp: ~1e-7 relative per token) of a
// running sum; then the neighbouring token is picked (or the top_p cutoff moves by one token).
// Tokens whose probability underflows to 0 (NaN, -inf, or far below the max) are ordered by
// logit here and by id on the CPU; they carry no mass, so this only changes which zero-mass
// tokens top_k counts, never a pick (except the CPU's fallback to the last kept token when
// rounding leaves u above the total, where the GPU picks the last kept token with mass). A row
// whose max logit is +inf, or with no finite non-NaN logit, takes the argmax (the CPU computes
// NaN probabilities there).
#include <cmath>
#include <cstdint>
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>
#include <stdexcept>

#include "engine/cuda/cuda_check.hpp"
#include "engine/cuda/sampling_kernels.hpp"

namespace inferlab::engine::cuda {
namespace {

constexpr int kThreads = 1024;
constexpr int kItems = 8;  // consecutive logits per thread per tile: two float4 loads in flight
constexpr int kTile = kThreads * kItems;
constexpr int kMaxVocab = 1 << 19;               // keeps every mass sum below 2^63
constexpr float kMassScale = 17592186044416.0f;  // 2^44
// The order key's digits, most significant first: 10 bits (first histogram, kept for every
// search of the row), then 11 and 11.
constexpr int kFirstShift = 22;
constexpr int kFirstBuckets = 1 << 10;
constexpr int kDigitBits = 11;
constexpr int kBuckets = 1 << kDigitBits;

using ull = unsigned long long;
using ReduceU64 = cub::BlockReduce<ull, kThreads>;
using ScanU64 = cub::BlockScan<ull, kThreads>;
using ScanInt = cub::BlockScan<int, kThreads>;

struct MaxOp {
  __device__ ull operator()(ull a, ull b) const { return a > b ? a : b; }
};
struct SumOp {
  __device__ ull operator()(ull a, ull b) const { return a + b; }
};

// The crossing digit of one histogram, and the counts and masses of the digits before it.
struct Crossing {
  uint32_t digit;
  ull before_count, before_mass, count, mass;
};

struct Shared {
  uint32_t first_count[kFirstBuckets];
  ull first_mass[kFirstBuckets];
  uint32_t count[kBuckets];
  ull mass[kBuckets];
  union {
    ReduceU64::TempStorage reduce;
    ScanU64::TempStorage scan;
    ScanInt::TempStorage int_scan;
  } tmp;
  Crossing crossing;
  ull broadcast;
  int found;
};

// Larger logit, larger key. NaN ranks with -inf (both have probability 0 and the CPU orders
// them by id), and -0 with +0 (equal logits, ordered by id).
__device__ __forceinline__ uint32_t order_key(float logit) {
  if (isnan(logit)) logit = -INFINITY;
  uint32_t bits = __float_as_uint(logit);
  if (bits == 0x80000000u) bits = 0;
  return (bits & 0x80000000u) ? ~bits : (bits | 0x80000000u);
}

// Ascending rank = the CPU's order (logit descending); the radix search walks it upwards.
__device__ __forceinline__ uint32_t rank_key(float logit) {
  return ~order_key(logit);
}

// For the argmax: NaN below everything (it never wins), then the lowest id among equal keys.
__device__ __forceinline__ ull argmax_key(float logit, int id) {
  const uint32_t key = isnan(logit) ? 0u : order_key(logit);
  return (ull{key} << 32) | (0xFFFFFFFFu - static_cast<uint32_t>(id));
}

// One token's unnormalized probability in 2^-44 units. A pure function of the logit (equal
// logits, equal masses), computed the same way in every pass.
__device__ __forceinline__ ull mass_of(float logit, float max_logit, float temperature) {
  if (isnan(logit)) return 0;
  const float p = expf((logit - max_logit) / temperature);
  return __float2ull_rn(p * kMassScale);
}

struct Row {
  const float* logits;
  int vocab;
  bool vectorized;  // vocab % 4 == 0 and 16-byte aligned logits
  float max_logit;
  float temperature;
};

// Calls f(first_id, values[kItems]) for each tile of the row, thread t holding ids
// first_id .. first_id + kItems - 1 (ids past the vocabulary hold 0 and must be ignored). Every
// thread runs the same iterations (warp and block collectives inside f are safe); f returns false,
// the same in every thread, to stop.
template <typename F>
__device__ __forceinline__ void for_each_tile(const Row& row, F&& f) {
  for (int base = 0; base < row.vocab; base += kTile) {
    const int first = base + static_cast<int>(threadIdx.x) * kItems;
    float v[kItems];
    if (row.vectorized && first + kItems <= row.vocab) {
      const float4 x = *reinterpret_cast<const float4*>(row.logits + first);
      const float4 y = *reinterpret_cast<const float4*>(row.logits + first + 4);
      v[0] = x.x;
      v[1] = x.y;
      v[2] = x.z;
      v[3] = x.w;
      v[4] = y.x;
      v[5] = y.y;
      v[6] = y.z;
      v[7] = y.w;
    } else {
#pragma unroll
      for (int j = 0; j < kItems; ++j) v[j] = first + j < row.vocab ? row.logits[first + j] : 0.f;
    }
    if (!f(first, v)) break;
  }
}

// Adds (1, mass) to bucket `digit` for the active lanes. Logits crowd into few digits (the
// first one is sign and exponent), so lanes with the same digit first sum within the warp
// (match + redux, as cooperative groups' labeled_partition does) and one lane adds to shared
// memory. Masses are <= 2^44, summed as two 22-bit halves (32 lanes stay below 2^27). All 32
// lanes must call it.
__device__ __forceinline__ void histogram_add(bool active, uint32_t digit, ull mass,
                                              uint32_t* counts, ull* masses) {
  const unsigned lanes = __ballot_sync(0xFFFFFFFFu, active);
  if (!active) return;
  const unsigned group = __match_any_sync(lanes, digit);
  const unsigned low = __reduce_add_sync(group, static_cast<unsigned>(mass & 0x3FFFFFu));
  const unsigned high = __reduce_add_sync(group, static_cast<unsigned>(mass >> 22));
  if (static_cast<int>(threadIdx.x % 32) == __ffs(group) - 1) {
    atomicAdd(&counts[digit], static_cast<unsigned>(__popc(group)));
    atomicAdd(&masses[digit], (ull{high} << 22) + low);
  }
}

// The digit in which the running count (by_count) or mass, walking the digits upwards, first
// reaches target (1 <= target <= the histogram's total), into s.crossing.
template <int Buckets>
__device__ void find_crossing(Shared& s, const uint32_t* counts, const ull* masses, bool by_count,
                              ull target) {
  constexpr int kPer = Buckets / kThreads;
  __syncthreads();  // s.crossing and s.tmp are free
  ull c[kPer], m[kPer], c_incl[kPer], m_incl[kPer];
#pragma unroll
  for (int i = 0; i < kPer; ++i) {
    c[i] = counts[threadIdx.x * kPer + i];
    m[i] = masses[threadIdx.x * kPer + i];
  }
  ScanU64(s.tmp.scan).InclusiveSum(c, c_incl);
  __syncthreads();
  ScanU64(s.tmp.scan).InclusiveSum(m, m_incl);
#pragma unroll
  for (int i = 0; i < kPer; ++i) {
    const ull incl = by_count ? c_incl[i] : m_incl[i];
    const ull own = by_count ? c[i] : m[i];
    // The running sums only grow, so exactly one digit holds the crossing.
    if (incl - own < target && target <= incl) {
      s.crossing = {static_cast<uint32_t>(threadIdx.x * kPer + i), c_incl[i] - c[i],
                    m_incl[i] - m[i], c[i], m[i]};
    }
  }
  __syncthreads();
}

// Where a search ended: the tokens whose rank >> shift == prefix hold the crossing; `taken` of
// them (in id order) are needed to reach the target, and kept_mass is the mass of every token up
// to and including the crossing one.
struct Found {
  uint32_t prefix;
  int shift;
  ull taken;
  ull kept_mass;
};

// The first position of the CPU's order whose running count (by_count) or mass reaches target
// (1 <= target <= the row's total).
__device__ Found search(Shared& s, const Row& row, bool by_count, ull target) {
  find_crossing<kFirstBuckets>(s, s.first_count, s.first_mass, by_count, target);
  Crossing c = s.crossing;
  uint32_t prefix = c.digit;
  int shift = kFirstShift;
  ull before_mass = c.before_mass;
  target -= by_count ? c.before_count : c.before_mass;
  // Refine while the crossing digit holds more than one token and more than one key.
  while (c.count > 1 && shift > 0) {
    const int next_shift = shift - kDigitBits;
    for (int i = threadIdx.x; i < kBuckets; i += kThreads) {
      s.count[i] = 0;
      s.mass[i] = 0;
    }
    __syncthreads();
    for_each_tile(row, [&](int first, const float* v) {
#pragma unroll
      for (int j = 0; j < kItems; ++j) {
        const uint32_t rank = rank_key(v[j]);
        const bool active = first + j < row.vocab && (rank >> shift) == prefix;
        const ull mass = active ? mass_of(v[j], row.max_logit, row.temperature) : 0;
        histogram_add(active, (rank >> next_shift) & (kBuckets - 1), mass, s.count, s.mass);
      }
      return true;
    });
    find_crossing<kBuckets>(s, s.count, s.mass, by_count, target);
    c = s.crossing;
    prefix = (prefix << kDigitBits) | c.digit;
    shift = next_shift;
    before_mass += c.before_mass;
    target -= by_count ? c.before_count : c.before_mass;
  }
  // The crossing digit is one token, or c.count tokens of one logit (equal masses), of which
  // the first `taken` in id order reach the (now relative) target.
  Found f{prefix, shift, 1, before_mass + c.mass};
  if (c.count > 1) {
    const ull each = c.mass / c.count;
    f.taken = by_count ? target : (target + each - 1) / each;
    f.kept_mass = before_mass + f.taken * each;
  }
  return f;
}

// The id of the n-th (from 1) token, lowest ids first, whose rank >> shift == prefix.
__device__ int nth_in_group(Shared& s, const Row& row, uint32_t prefix, int shift, ull n) {
  if (threadIdx.x == 0) s.found = -1;
  ull before = 0;  // matches in earlier tiles, the same in every thread
  for_each_tile(row, [&](int first, const float* v) {
    bool match[kItems];
    int count = 0;
#pragma unroll
    for (int j = 0; j < kItems; ++j) {
      match[j] = first + j < row.vocab && (rank_key(v[j]) >> shift) == prefix;
      count += match[j];
    }
    int exclusive = 0, total = 0;
    ScanInt(s.tmp.int_scan).ExclusiveSum(count, exclusive, total);
    const ull mine = before + static_cast<ull>(exclusive);
    if (mine < n && n <= mine + count) {
      ull left = n - mine;
#pragma unroll
      for (int j = 0; j < kItems; ++j) {
        if (match[j] && --left == 0) s.found = first + j;
      }
    }
    before += static_cast<ull>(total);
    __syncthreads();  // s.tmp is reused by the next tile's scan
    return before < n;
  });
  __syncthreads();
  return s.found;
}

// A target from a real number, rounded as the caller did, within [1, hi].
__device__ __forceinline__ ull clamp_target(double want, ull hi) {
  if (!(want > 1.0)) return 1;
  if (want >= static_cast<double>(hi)) return hi;
  const ull t = static_cast<ull>(want);
  return t < hi ? t : hi;
}

__global__ void __launch_bounds__(kThreads)
    sample_rows_kernel(const float* logits, int vocab, bool vectorized,
                       const RowSampling* rows_params, int32_t* ids) {
  __shared__ Shared s;
  const RowSampling params = rows_params[blockIdx.x];
  Row row{logits + static_cast<size_t>(blockIdx.x) * vocab, vocab, vectorized, 0.f,
          params.temperature};

  // Argmax: the largest (key, -id) over the row.
  ull best = 0;
  for_each_tile(row, [&](int first, const float* v) {
#pragma unroll
    for (int j = 0; j < kItems; ++j) {
      if (first + j < vocab) {
        const ull key = argmax_key(v[j], first + j);
        best = key > best ? key : best;
      }
    }
    return true;
  });
  best = ReduceU64(s.tmp.reduce).Reduce(best, MaxOp{});
  if (threadIdx.x == 0) s.broadcast = best;
  __syncthreads();
  const int argmax = static_cast<int>(0xFFFFFFFFu - static_cast<uint32_t>(s.broadcast));
  row.max_logit = row.logits[argmax];
  if (!(params.temperature > 0) || params.top_k == 1 || !isfinite(row.max_logit)) {
    if (threadIdx.x == 0) ids[blockIdx.x] = argmax;
    return;
  }

  // The first digit's histogram over the whole row, shared by every search below.
  for (int i = threadIdx.x; i < kFirstBuckets; i += kThreads) {
    s.first_count[i] = 0;
    s.first_mass[i] = 0;
  }
  __syncthreads();
  for_each_tile(row, [&](int first, const float* v) {
#pragma unroll
    for (int j = 0; j < kItems; ++j) {
      const bool active = first + j < vocab;
      const ull mass = active ? mass_of(v[j], row.max_logit, row.temperature) : 0;
      histogram_add(active, rank_key(v[j]) >> kFirstShift, mass, s.first_count, s.first_mass);
    }
    return true;
  });
  __syncthreads();
  ull part = 0;
  for (int i = threadIdx.x; i < kFirstBuckets; i += kThreads) part += s.first_mass[i];
  __syncthreads();  // s.tmp was not in use, but keep the reduce after every histogram add
  part = ReduceU64(s.tmp.reduce).Reduce(part, SumOp{});
  if (threadIdx.x == 0) s.broadcast = part;
  __syncthreads();
  ull kept = s.broadcast;  // >= 2^44: the max token alone has mass 2^44

  if (params.top_k > 0 && params.top_k < vocab) {
    kept = search(s, row, true, static_cast<ull>(params.top_k)).kept_mass;
  }
  if (params.top_p < 1.0f) {
    const double want = ceil(static_cast<double>(params.top_p) * static_cast<double>(kept));
    kept = search(s, row, false, clamp_target(want, kept)).kept_mass;
  }
  // Running mass > u · kept  <=>  running mass >= floor(u · kept) + 1 (integers).
  const double want = floor(params.uniform * static_cast<double>(kept)) + 1.0;
  const Found pick = search(s, row, false, clamp_target(want, kept));
  const int id = nth_in_group(s, row, pick.prefix, pick.shift, pick.taken);
  if (threadIdx.x == 0) ids[blockIdx.x] = id;
}

}  // namespace

size_t sampling_workspace_bytes(int /*rows*/, int /*vocab*/) {
  return 0;
}

void sample_rows(const float* logits, int rows, int vocab, const RowSampling* rows_params,
                 int32_t* ids, void* /*workspace*/, size_t workspace_bytes, cudaStream_t stream) {
  if (rows < 0 || vocab < 1 || vocab > kMaxVocab) {
    throw std::invalid_argument("sample_rows: rows must be >= 0 and vocab in [1, 2^19]");
  }
  if (workspace_bytes < sampling_workspace_bytes(rows, vocab)) {
    throw std::invalid_argument("sample_rows: workspace too small");
  }
  if (rows == 0) return;
  const bool vectorized = vocab % 4 == 0 && reinterpret_cast<uintptr_t>(logits) % 16 == 0;
  sample_rows_kernel<<<rows, kThreads, 0, stream>>>(logits, vocab, vectorized, rows_params, ids);
  INFERLAB_CUDA_CHECK_LAUNCH();
}

}  // namespace inferlab::engine::cuda
