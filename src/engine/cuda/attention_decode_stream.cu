// Flash-decoding for large batches on the tensor cores: each warp streams its own chunks of 16
// positions through a ring of cp.async stages in shared memory, computes S = Q Kᵀ and O += P V
// with mma.sync (the group's query heads are the rows of the 16-row tile: up to 8 of them, the
// other rows zero) and keeps its own online softmax, so that no barrier of the whole CTA stands
// between a chunk's copies and its math. The CTAs are (sequence, KV head, tile of 8 query heads,
// split of the context), as in attention_decode.cu, and write the same outputs or split-K
// partials (the same combine kernel merges them). bf16 caches in blocks of a multiple of 16
// positions only: other caches take the chunked kernel.
//
// Why (docs/MEASUREMENTS.md §23). The chunked kernel (attention_decode.cu) is built for batch 1,
// where the time is latency. At batch 64 × context 1024 of Llama 3 8B (268 MB of keys and values
// per layer) it reads 2.16 TB/s in its benchmark (1.6 TB/s in the engine) against the probe's
// 4.60 TB/s. A first streaming version on the CUDA cores, each warp on its own rows with no CTA
// barrier, ran no faster (2.11 TB/s; Nsight Compute: 47% SM throughput, 44% DRAM throughput):
// with a group of 4 query heads every bf16 element read costs 4 FMAs for the scores and 4 for
// the output, plus its conversion, about 70% of the SMs' FP32 rate at full bandwidth before any
// softmax or addressing. On the tensor cores that arithmetic is 32 mma per 16 positions whatever
// the group: 3.27 TB/s at that shape, and 4.02 TB/s once each 16-position chunk was aligned to
// its block (one table entry and one address per chunk instead of one per row) and the scores
// were summed over two mma chains instead of one.
#include <cuda_bf16.h>

#include <cstdint>
#include <stdexcept>

#include "engine/cuda/attention_decode_common.cuh"
#include "engine/cuda/attention_device.cuh"
#include "engine/cuda/attention_kernels.hpp"

namespace inferlab::engine::cuda::detail {
namespace {

constexpr int kThreads = 128;
constexpr int kWarps = kThreads / 32;
constexpr int kPositions = 16;  // positions per chunk: the k of P·V's mma
constexpr int kHeads = 8;       // query heads per tile: rows 0-7 of the mma's 16

// Sizes for head_dim D and a ring of kStages chunks per warp (kStages − 1 in flight while one is
// read). Rows of D bf16 in shared memory, their 16-byte pieces swizzled (piece c
// of row r at c ^ (r % 8)) so that ldmatrix's eight rows of one piece fall in distinct banks.
// Copies: lane L moves pieces L + 32 j of the chunk (row (L + 32 j) / kPieces); where kPieces
// divides 32 (head_dim 64, 128, 256) that is one piece of rows 32 / kPieces apart.
template <int D, int kStages>
struct MmaTile {
  static constexpr int kRowBytes = D * 2;
  static constexpr int kPieces = D / 8;  // 16-byte pieces per row
  static constexpr bool kUniformCopy = 32 % kPieces == 0;
  static constexpr int kCopyRows = kPositions * kPieces / 32;  // pieces each lane copies
  static constexpr int kOperandBytes = kPositions * kRowBytes;
  static constexpr int kStageBytes = 2 * kOperandBytes;  // keys, then values
  static constexpr int kWarpBytes = kStages * kStageBytes;
  static constexpr int kKSteps = D / 16;  // k-steps of Q Kᵀ
  static constexpr int kNTiles = D / 8;   // n-tiles of P V
  // The merge at the end, over the rings: [kWarps][kHeads][D] outputs, [kWarps][kHeads] pairs.
  static constexpr int kMergeBytes = kWarps * kHeads * (D + 2) * 4;
  static constexpr size_t kSmemBytes =
      kWarps * kWarpBytes > kMergeBytes ? kWarps* kWarpBytes : kMergeBytes;
  static_assert(kPieces >= 8 && kPieces % 8 == 0, "the swizzle needs whole groups of 8 pieces");
  static_assert(kCopyRows * 32 == kPositions * kPieces, "a chunk is whole copy steps");
};

// Block-table lookups: a shift and a mask when the block size is a power of two (the engine's
// 16; a.block_shift ≥ 0), division otherwise.
struct BlockMath {
  int size, shift;
  __device__ int index(int pos) const { return shift >= 0 ? pos >> shift : pos / size; }
  __device__ int offset(int pos) const { return shift >= 0 ? pos & (size - 1) : pos % size; }
};

// kMinBlocks: CTAs an SM must hold at once (the register budget per thread follows). Shipped:
// 3 stages and 2 CTAs per SM; 2 stages and 3 CTAs (168 registers, a 16-byte spill) measured
// slower from batch 32 (docs/MEASUREMENTS.md §23). Head_dim 192: 2 stages and 2 CTAs; 256: 3
// stages and 1 CTA (launch_stream_decode). At both the output accumulators (4 per n-tile, 96 or
// 128 registers) and the ldmatrix fragments in flight reach the 255-register limit: ptxas spills
// 44-80 bytes (CUDA 13.0, sm_90). Not measured against the chunked kernel yet
// (INFERLAB_ENGINE_DECODE_KERNEL=chunked for the A/B).
template <int D, int kStages, int kMinBlocks>
__global__ void __launch_bounds__(kThreads, kMinBlocks) stream_kernel(const DecodeArgs a) {
  using T = MmaTile<D, kStages>;
  extern __shared__ __align__(128) unsigned char smem[];

  // Until the grid wait only what no kernel of this pass writes: the metadata, the block tables
  // and (a.cache_before_wait) the cache rows of every position but the new one, context - 1.
  if (!a.cache_before_wait) wait_for_prerequisite_grid();
  const PagedAttentionParams& p = a.p;
  const int head_tiles = (a.group + kHeads - 1) / kHeads;
  const int kv_head = blockIdx.x / head_tiles;
  const int head_lo = (blockIdx.x % head_tiles) * kHeads;
  const int heads_here = min(kHeads, a.group - head_lo);
  const int head0 = kv_head * a.group + head_lo;
  const int seq = blockIdx.y;
  const int split = blockIdx.z;
  const int tid = threadIdx.x;
  const int warp = tid / 32;
  const int lane = tid % 32;
  unsigned char* ring = smem + warp * T::kWarpBytes;
  const BlockMath blocks{p.block_size, a.block_shift};

  const int table_row = p.table_rows == nullptr ? seq : p.table_rows[seq];
  const int32_t* table = p.block_tables + static_cast<int64_t>(table_row) * p.block_table_stride;
  const int token = p.query_start[seq];
  const int token_end = p.query_start[seq + 1];
  const int ctx = p.context_lens[seq];
  if (token_end - token != 1) {    // no single new token: not this kernel's sequence
    wait_for_prerequisite_grid();  // (every block waits: the chain of completions stays whole)
    return;
  }
  const int first = p.sliding_window > 0 ? max(0, ctx - p.sliding_window) : 0;
  const int split_begin = split * a.partition;
  const int begin = max(split_begin, first);
  const int end = min(split_begin + a.partition, ctx);
  // The row the kernel before this one writes (the new token's key and value), copied after the
  // grid wait when the others go before it; -1: none held back, also where that row lies past
  // this split (in a chunk the split shares with the next, which the copies zero-fill).
  const int late_position = a.cache_before_wait && ctx - 1 < end ? ctx - 1 : -1;
  if (begin >= end) {  // an empty split (short or windowed context): weight zero in the combine
    wait_for_prerequisite_grid();
    for (int i = tid; i < heads_here * D; i += kThreads) {
      write_split_element<D>(a, token, seq, head0 + i / D, split, i % D, 0.0f, -INFINITY, 0.0f);
    }
    return;
  }
  // The split's positions in chunks of 16 aligned to multiples of 16 (positions before `begin`
  // masked); warp w takes chunks w, w + kWarps, ... The block size is a multiple of 16
  // (launch_decode_path sends other sizes to the chunked kernel), so a chunk lies in one block:
  // one table entry per chunk, and its rows a fixed stride apart in the cache.
  const int first_chunk = begin & ~(kPositions - 1);
  const int chunks = (end - first_chunk + kPositions - 1) / kPositions;
  const int mine = chunks > warp ? (chunks - warp + kWarps - 1) / kWarps : 0;
  auto chunk_begin = [&](int i) { return first_chunk + (warp + i * kWarps) * kPositions; };
  const int64_t slot_bytes = static_cast<int64_t>(p.num_kv_heads) * T::kRowBytes;

  // Copies (where kPieces divides 32): lane L moves piece L % kPieces of rows L / kPieces +
  // j · 32 / kPieces, keys and values.
  const int copy_piece = lane % T::kPieces;
  const int copy_row0 = lane / T::kPieces;
  auto load_entry = [&](int i) {
    return i < mine ? __ldg(table + blocks.index(chunk_begin(i))) : 0;
  };
  // Chunk i's copies into its stage; a row at position `skip` is left out (copied by copy_row).
  auto issue = [&](int32_t entry, int i, int skip) {
    unsigned char* stage = ring + (i % kStages) * T::kStageBytes;
    const int c0 = chunk_begin(i);
    if constexpr (!T::kUniformCopy) {
      // (head_dim 192: 24 pieces a row, so a lane's pieces lie in rows a varying step apart.)
#pragma unroll
      for (int j = 0; j < T::kCopyRows; ++j) {
        const int c = lane + 32 * j;
        const int r = c / T::kPieces;
        const int piece = c % T::kPieces;
        if (c0 + r == skip) continue;
        const bool valid = i < mine && c0 + r >= begin && c0 + r < end;
        const int64_t offset =
            valid ? ((static_cast<int64_t>(entry) * p.block_size + blocks.offset(c0) + r) *
                         p.num_kv_heads +
                     kv_head) *
                            T::kRowBytes +
                        piece * 16
                  : 0;
        unsigned char* dst = stage + r * T::kRowBytes + ((piece ^ (r & 7)) * 16);
        cp_async16(dst, static_cast<const unsigned char*>(p.cache.k) + offset, valid ? 16 : 0);
        cp_async16(dst + T::kOperandBytes, static_cast<const unsigned char*>(p.cache.v) + offset,
                   valid ? 16 : 0);
      }
    } else {
      constexpr int kRowStep = 32 / T::kPieces;  // between a lane's rows
      // Byte offset of this lane's piece of the chunk's row copy_row0.
      const int64_t base =
          ((static_cast<int64_t>(entry) * p.block_size + blocks.offset(c0) + copy_row0) *
               p.num_kv_heads +
           kv_head) *
              T::kRowBytes +
          copy_piece * 16;
#pragma unroll
      for (int j = 0; j < T::kCopyRows; ++j) {
        const int r = copy_row0 + j * kRowStep;
        if (c0 + r == skip) continue;
        const bool valid = i < mine && c0 + r >= begin && c0 + r < end;
        const int64_t offset = valid ? base + j * kRowStep * slot_bytes : 0;
        unsigned char* dst = stage + r * T::kRowBytes + ((copy_piece ^ (r & 7)) * 16);
        cp_async16(dst, static_cast<const unsigned char*>(p.cache.k) + offset, valid ? 16 : 0);
        cp_async16(dst + T::kOperandBytes, static_cast<const unsigned char*>(p.cache.v) + offset,
                   valid ? 16 : 0);
      }
    }
  };

  // Row `position` of chunk i (in its stage) by plain loads and shared stores, the lanes a piece
  // each: the row the early copies left out, once the grid wait has made it visible. (The
  // warp's __syncwarp before the chunk's math orders these stores before its reads.)
  auto copy_row = [&](int32_t entry, int i, int position) {
    unsigned char* stage = ring + (i % kStages) * T::kStageBytes;
    const int r = position - chunk_begin(i);
    const int64_t row =
        ((static_cast<int64_t>(entry) * p.block_size + blocks.offset(position)) * p.num_kv_heads +
         kv_head) *
        T::kRowBytes;
    for (int piece = lane; piece < T::kPieces; piece += 32) {
      unsigned char* dst = stage + r * T::kRowBytes + ((piece ^ (r & 7)) * 16);
      const int64_t offset = row + piece * 16;
      *reinterpret_cast<uint4*>(dst) =
          *reinterpret_cast<const uint4*>(static_cast<const unsigned char*>(p.cache.k) + offset);
      *reinterpret_cast<uint4*>(dst + T::kOperandBytes) =
          *reinterpret_cast<const uint4*>(static_cast<const unsigned char*>(p.cache.v) + offset);
    }
  };

  // The table entries of the first kStages chunks in one trip, then the first kStages - 1
  // chunks' copies (one cp.async group each; empty groups keep the counting uniform), before the
  // grid wait where a.cache_before_wait (the new position's row after it).
  int32_t entries[kStages];
#pragma unroll
  for (int i = 0; i < kStages; ++i) entries[i] = load_entry(i);
#pragma unroll
  for (int i = 0; i < kStages - 1; ++i) {
    issue(entries[i], i, late_position);
    cp_async_commit();
  }
  if (a.cache_before_wait) {
    wait_for_prerequisite_grid();
#pragma unroll
    for (int i = 0; i < kStages - 1; ++i) {
      const int c0 = chunk_begin(i);
      if (i < mine && late_position >= max(c0, begin) &&
          late_position < min(c0 + kPositions, end)) {
        copy_row(entries[i], i, late_position);
      }
    }
  }
  int32_t next = entries[kStages - 1];  // the entry of the chunk the loop issues next
  allow_dependent_grid();

  // Q as the mma's A fragments: row lane / 4 is query head head_lo + lane / 4 (zero past the
  // group), columns (lane % 4)·2 and +1 of each 8 (a0, a2); rows 8-15 (a1, a3) are zero.
  const int quad_row = lane / 4;
  const int quad_col = (lane % 4) * 2;
  uint32_t qa[T::kKSteps][4];
  {
    const bool real = quad_row < heads_here;
    const auto* q_row =
        reinterpret_cast<const uint32_t*>(p.q + static_cast<int64_t>(token) * p.q_row_stride +
                                          static_cast<int64_t>(head0 + (real ? quad_row : 0)) * D);
#pragma unroll
    for (int s = 0; s < T::kKSteps; ++s) {
      qa[s][0] = real ? __ldg(q_row + (s * 16 + quad_col) / 2) : 0u;
      qa[s][1] = 0u;
      qa[s][2] = real ? __ldg(q_row + (s * 16 + 8 + quad_col) / 2) : 0u;
      qa[s][3] = 0u;
    }
  }
  const float score_scale = p.softmax_scale * kLog2e;  // scores in the log2 domain (exp2f)
  // This lane's row (head quad_row): its running max (the same in the quad), its share of the
  // sum, and its output columns n·8 + quad_col, +1 (o[n][0], o[n][1]; o[n][2..3] are rows 8-15).
  float m = -INFINITY, l = 0.0f;
  float o[T::kNTiles][4];
#pragma unroll
  for (int n = 0; n < T::kNTiles; ++n) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.0f;
  // ldmatrix sources: lane L gives row L % 8 of matrix L / 8.
  const int ld_row = lane % 8;
  const int ld_mat = lane / 8;

  for (int i = 0; i < mine; ++i) {
    // Chunk i + kStages - 1 into the stage chunk i - 1 used (read to the end last pass).
    issue(next, i + kStages - 1, -1);  // (after the grid wait: every row)
    cp_async_commit();
    next = load_entry(i + kStages);
    cp_async_wait<kStages - 1>();  // chunk i has landed (this lane's copies)
    __syncwarp();                  // and every lane's
    const unsigned char* keys = ring + (i % kStages) * T::kStageBytes;
    const unsigned char* values = keys + T::kOperandBytes;
    const int c0 = chunk_begin(i);

    // S = Q Kᵀ, two n-tiles of 8 positions; ldmatrix x4 gives an n-tile's B fragments for two
    // k-steps (matrices: dims 0-7, 8-15 of step s, then of step s + 1).
    float s[2][4];
#pragma unroll
    for (int t = 0; t < 2; ++t) {
      // Even and odd k-steps into two accumulators: two chains of kKSteps / 2 dependent mma
      // instead of one of kKSteps.
      float even[4] = {0.0f, 0.0f, 0.0f, 0.0f}, odd[4] = {0.0f, 0.0f, 0.0f, 0.0f};
      const int row = t * 8 + ld_row;
#pragma unroll
      for (int k = 0; k < T::kKSteps; k += 2) {
        uint32_t b[4];
        const int piece = k * 2 + ld_mat;
        ldmatrix_x4(b, keys + row * T::kRowBytes + ((piece ^ ld_row) * 16));
        mma_bf16(even, qa[k], b[0], b[1]);
        mma_bf16(odd, qa[k + 1], b[2], b[3]);
      }
#pragma unroll
      for (int e = 0; e < 4; ++e) s[t][e] = even[e] + odd[e];
    }
    // Online softmax of row quad_row over the chunk: the quad's four lanes hold its 16 scores.
    float mx = m;
#pragma unroll
    for (int t = 0; t < 2; ++t) {
#pragma unroll
      for (int j = 0; j < 2; ++j) {
        const int pos = c0 + t * 8 + quad_col + j;
        s[t][j] = pos >= begin && pos < end ? s[t][j] * score_scale : -INFINITY;
        mx = fmaxf(mx, s[t][j]);
      }
    }
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
    const float alpha = m == -INFINITY ? 0.0f : exp2f(m - mx);  // o and l are 0 until then
    m = mx;
    float w[2][2];
#pragma unroll
    for (int t = 0; t < 2; ++t) {
#pragma unroll
      for (int j = 0; j < 2; ++j) w[t][j] = s[t][j] == -INFINITY ? 0.0f : exp2f(s[t][j] - mx);
    }
    l = l * alpha + (w[0][0] + w[0][1]) + (w[1][0] + w[1][1]);
    // P as the A fragment of P V (k = the chunk's 16 positions): n-tile 0's columns, then 1's.
    const uint32_t pa[4] = {pack_bf16(w[0][0], w[0][1]), 0u, pack_bf16(w[1][0], w[1][1]), 0u};
    // O = O·alpha + P V; ldmatrix x4 trans gives two n-tiles' B fragments (matrices: positions
    // 0-7 and 8-15 of dims d..d+7, then of d+8..d+15).
#pragma unroll
    for (int n = 0; n < T::kNTiles; n += 2) {
      uint32_t b[4];
      const int row = (ld_mat & 1) * 8 + ld_row;
      const int piece = n + (ld_mat >> 1);
      ldmatrix_x4_trans(b, values + row * T::kRowBytes + ((piece ^ ld_row) * 16));
      o[n][0] *= alpha;
      o[n][1] *= alpha;
      o[n + 1][0] *= alpha;
      o[n + 1][1] *= alpha;
      mma_bf16(o[n], pa, b[0], b[1]);
      mma_bf16(o[n + 1], pa, b[2], b[3]);
    }
    __syncwarp();  // the stage is read before the next pass refills it
  }
  cp_async_wait<0>();  // (only empty groups can remain)
  l += __shfl_xor_sync(0xffffffffu, l, 1);
  l += __shfl_xor_sync(0xffffffffu, l, 2);
  __syncthreads();  // every warp is done with its ring: the area becomes the merge's

  // Merge the warps: out = Σ_w 2^(m_w − M) o_w / Σ_w 2^(m_w − M) l_w over the warps that saw a
  // position (l_w > 0; at least one did, since the split is not empty).
  float* s_o = reinterpret_cast<float*>(smem);                          // [kWarps][kHeads][D]
  float2* s_ml = reinterpret_cast<float2*>(s_o + kWarps * kHeads * D);  // [kWarps][kHeads]
#pragma unroll
  for (int n = 0; n < T::kNTiles; ++n) {
    *reinterpret_cast<float2*>(s_o + (warp * kHeads + quad_row) * D + n * 8 + quad_col) =
        make_float2(o[n][0], o[n][1]);
  }
  if (lane % 4 == 0) s_ml[warp * kHeads + quad_row] = make_float2(m, l);
  __syncthreads();
  for (int i = tid; i < heads_here * D; i += kThreads) {
    const int h = i / D;
    const int d = i % D;
    float m_all = -INFINITY;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) {
      const float2 ml = s_ml[w * kHeads + h];
      if (ml.y > 0.0f) m_all = fmaxf(m_all, ml.x);
    }
    float out = 0.0f, l_all = 0.0f;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) {
      const float2 ml = s_ml[w * kHeads + h];
      if (ml.y > 0.0f) {
        const float weight = exp2f(ml.x - m_all);
        out = fmaf(weight, s_o[(w * kHeads + h) * D + d], out);
        l_all = fmaf(weight, ml.y, l_all);
      }
    }
    write_split_element<D>(a, token, seq, head0 + h, split, d, out / l_all, m_all, l_all);
  }
}

template <int D, int kStages, int kMinBlocks>
void launch(const DecodeArgs& a, bool programmatic, cudaStream_t stream) {
  using T = MmaTile<D, kStages>;
  constexpr auto kernel = stream_kernel<D, kStages, kMinBlocks>;
  static std::atomic<uint64_t> configured{0};
  once_per_device(configured, [] {  // over 48 KB of shared memory needs the kernel's consent
    INFERLAB_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                             static_cast<int>(T::kSmemBytes)));
    INFERLAB_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout,
                                             cudaSharedmemCarveoutMaxShared));
  });
  const int head_tiles = (a.group + kHeads - 1) / kHeads;
  const dim3 grid(static_cast<unsigned>(a.p.num_kv_heads * head_tiles),
                  static_cast<unsigned>(a.p.num_seqs), static_cast<unsigned>(a.num_splits));
  launch_kernel(kernel, grid, dim3(kThreads), T::kSmemBytes, programmatic, stream, a);
}

}  // namespace

void launch_stream_decode(const DecodeArgs& a, bool programmatic, cudaStream_t stream) {
  if (a.p.cache.format != DType::bf16) {
    throw std::invalid_argument("paged_attention: the streamed decode kernel takes a bf16 cache");
  }
  with_head_dim(a.p.head_dim, [&](auto head_dim) {
    constexpr int D = decltype(head_dim)::value;
    if constexpr (D <= 128) {
      launch<D, 3, 2>(a, programmatic, stream);
    } else if constexpr (D == 192) {
      // Three stages would take 144 KB per CTA, one CTA per SM: two stages (96 KB) keep two, as
      // many chunks in flight per SM.
      launch<D, 2, 2>(a, programmatic, stream);
    } else {
      // 256: two stages would already take 128 KB, one CTA per SM, so three (192 KB).
      launch<D, 3, 1>(a, programmatic, stream);
    }
  });
}

}  // namespace inferlab::engine::cuda::detail
