// The Projector: checks a call, picks the GEMV (gemv_plan.hpp) or the tensor-core path, and
// runs it in the Projector's one allocation (projection_workspace.hpp).
#include "engine/cuda/projection.hpp"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "engine/cuda/gemv_launch.hpp"
#include "engine/cuda/gemv_stream.hpp"
#include "engine/cuda/projection_kernels.hpp"
#include "engine/cuda/projection_lt.hpp"
#include "engine/cuda/projection_workspace.hpp"

namespace inferlab::engine::cuda {

namespace {

using bf16 = __nv_bfloat16;

[[noreturn]] void refuse(const std::string& what) {
  throw std::invalid_argument("Projector: " + what);
}

bool aligned16(const void* p) {
  return reinterpret_cast<uintptr_t>(p) % 16 == 0;
}

GemvKind kind_of(const DeviceMatrix& w) {
  GemvKind kind = GemvKind::bf16;
  if (!gemv_kind_for(w.format, w.input_format, &kind)) {
    refuse(std::string("no kernels for ") + std::string(dtype_name(w.format)) + " weights with " +
           std::string(dtype_name(w.input_format)) + " input");
  }
  return kind;
}

int64_t row_bytes(const DeviceMatrix& w) {
  switch (w.format) {
    case DType::bf16:
      return w.in * 2;
    case DType::int4:
      return w.in / 2;
    default:
      return w.in;
  }
}

constexpr std::array<int64_t, 5> kDefaultRows = {Projector::kGemvRowsBf16, Projector::kGemvRowsInt8,
                                                 Projector::kGemvRowsInt4, Projector::kGemvRowsFp8,
                                                 Projector::kGemvRowsW8a8};

}  // namespace

const char* projection_path_name(ProjectionPath path) {
  switch (path) {
    case ProjectionPath::none:
      return "none";
    case ProjectionPath::gemv_stream:
      return "gemv_stream";
    case ProjectionPath::gemv:
      return "gemv";
    case ProjectionPath::gemv_prepared:
      return "gemv_prepared";
    case ProjectionPath::lt_bf16:
      return "lt_bf16";
    case ProjectionPath::lt_dequant_bf16:
      return "lt_dequant_bf16";
    case ProjectionPath::lt_fp8_outer:
      return "lt_fp8_outer";
    case ProjectionPath::lt_fp8_epilogue:
      return "lt_fp8_epilogue";
    case ProjectionPath::lt_int8:
      return "lt_int8";
  }
  return "?";
}

struct Projector::Impl {
  int64_t max_rows, max_in, max_out;
  DType format, input_format;
  ProjectionWorkspace layout;
  DeviceBuffer<unsigned char> arena;
  std::unique_ptr<LtRunner> lt;
  int sm_count = 132;
  std::array<int64_t, 5> gemv_rows = kDefaultRows;
  ProjectionTuning configured;  // what the backend asked for (default_gemv_rows reads it)
  GemvTuning tuning;
  ProjectionPath last = ProjectionPath::none;

  unsigned char* at(int64_t offset) { return arena.data() + offset; }

  // The row limits: the tuning's for a format, else its limit for all, else the measured ones.
  void default_gemv_rows() {
    const ProjectionTuning& t = configured;
    for (size_t i = 0; i < gemv_rows.size(); ++i) {
      const int64_t rows = t.gemv_rows[i] >= 0    ? t.gemv_rows[i]
                           : t.gemv_rows_all >= 0 ? t.gemv_rows_all
                                                  : kDefaultRows[i];
      gemv_rows[i] = std::clamp<int64_t>(rows, 0, kGemvMaxRows);
    }
    if (!t.gemv) gemv_rows.fill(0);
  }

  GemvPlan plan(int64_t rows, const DeviceMatrix& w, bool swiglu, bool norm) const {
    GemvProblem problem;
    problem.kind = kind_of(w);
    problem.rows = rows;
    problem.in = w.in;
    problem.out_rows = w.out;
    problem.group_size = w.group_size;
    problem.swiglu = swiglu;
    problem.norm = norm;
    return plan_gemv(problem, sm_count, layout.partials_bytes, tuning);
  }

  // The matrix is one this Projector serves, within its sizes, with its pointers set.
  void check_matrix(const DeviceMatrix& w, int64_t rows) const {
    kind_of(w);
    if (w.format != DType::bf16 && (w.format != format || w.input_format != input_format)) {
      refuse(std::string("built for ") + std::string(dtype_name(format)) + "/" +
             std::string(dtype_name(input_format)) + " matrices (and bf16), given " +
             std::string(dtype_name(w.format)) + "/" + std::string(dtype_name(w.input_format)));
    }
    if (rows < 0 || rows > max_rows)
      refuse(std::to_string(rows) + " rows, built for " + std::to_string(max_rows));
    if (w.in < 1 || w.in > max_in || w.out < 0 || w.out > max_out) {
      refuse("matrix " + std::to_string(w.out) + "x" + std::to_string(w.in) +
             " exceeds the sizes it was built for (" + std::to_string(max_out) + "x" +
             std::to_string(max_in) + ")");
    }
    if (w.data == nullptr) refuse("matrix data is null");
    if (!aligned16(w.data)) refuse("matrix data is not 16-byte aligned");
    if ((w.format == DType::int8 || w.format == DType::fp8) && w.scales == nullptr) {
      refuse("matrix scales are null");
    }
    if (w.format == DType::int4) {
      if (w.group_scales == nullptr || w.zeros == nullptr) refuse("int4 scales/zeros are null");
      if (w.group_size < 2 || w.group_size % 2 != 0 || w.in % w.group_size != 0) {
        refuse("int4 group size " + std::to_string(w.group_size) + " does not divide " +
               std::to_string(w.in) + " in even groups");
      }
    }
  }

  bool takes(int64_t rows, const DeviceMatrix& w) const {
    GemvKind kind;
    if (rows < 1 || !gemv_kind_for(w.format, w.input_format, &kind)) return false;
    if (rows > gemv_rows[static_cast<size_t>(kind)] || !aligned16(w.data)) return false;
    return streams(rows, w) || plan(rows, w, false, false).ok;
  }

  // One or two rows go to the streaming GEMV (unless INFERLAB_ENGINE_GEMV_STREAM=0).
  bool streams(int64_t rows, const DeviceMatrix& w) const {
    return stream_enabled && gemv_stream_supported(rows, w);
  }
  bool stream_enabled = true;
  GemvPdlChoice stream_pdl = GemvPdlChoice::automatic;  // ProjectionTuning::gemv_pdl
  GemvStreamPdl pdl_for(const DeviceMatrix& w) const {
    switch (stream_pdl) {
      case GemvPdlChoice::off:
        return GemvStreamPdl::off;
      case GemvPdlChoice::early:
        return GemvStreamPdl::early;
      case GemvPdlChoice::late:
        return GemvStreamPdl::late;
      case GemvPdlChoice::automatic:
        break;
    }
    return gemv_stream_default_pdl(w);
  }

  void run_gemv(const GemvPlan& plan, GemvParams& p, const DeviceMatrix& w, const bf16* x,
                int64_t rows, const bf16* norm_weight, float eps, cudaStream_t stream) {
    const GemvKind kind = kind_of(w);
    p.w = static_cast<const unsigned char*>(w.data);
    p.w_row_bytes = row_bytes(w);
    p.w_scales = w.scales;
    p.group_scales = w.group_scales;
    p.zeros = w.zeros;
    p.group_size = static_cast<int>(w.group_size);
    p.groups = w.group_size > 0 ? static_cast<int>(w.in / w.group_size) : 0;
    p.in = static_cast<int>(w.in);
    p.out_rows = static_cast<int>(w.out);
    p.features = static_cast<int>(plan.features);
    p.rows = static_cast<int>(rows);
    p.slice_len = static_cast<int>(plan.slice_len);
    p.x_stride = static_cast<int>(plan.x_stride_bytes);
    p.partials = reinterpret_cast<float*>(at(layout.partials_offset));
    p.counters = reinterpret_cast<int*>(at(layout.counters_offset));
    p.x = x;
    p.norm_weight = norm_weight;
    p.eps = eps;
    last = ProjectionPath::gemv;
    if (plan.prepared) {
      auto* codes = at(layout.rows_offset);
      auto* scales = reinterpret_cast<float*>(at(layout.scales_offset));
      if (gemv_kind_info(kind).quantized_input) {
        launch_prepare_rows(x, p.rows, p.in, norm_weight, eps,
                            kind == GemvKind::w8a8 ? RowQuant::int8 : RowQuant::fp8, nullptr, codes,
                            scales, stream);
        p.codes = codes;
        p.code_scales = scales;
      } else {
        auto* normed = reinterpret_cast<bf16*>(codes);
        launch_prepare_rows(x, p.rows, p.in, norm_weight, eps, RowQuant::none, normed, nullptr,
                            nullptr, stream);
        p.x = normed;
      }
      p.norm_weight = nullptr;
      last = ProjectionPath::gemv_prepared;
    }
    switch (kind) {
      case GemvKind::bf16:
        launch_gemv_bf16(p, plan, stream);
        break;
      case GemvKind::int8:
        launch_gemv_int8(p, plan, stream);
        break;
      case GemvKind::int4:
        launch_gemv_int4(p, plan, stream);
        break;
      case GemvKind::fp8:
        launch_gemv_fp8(p, plan, stream);
        break;
      case GemvKind::w8a8:
        launch_gemv_w8a8(p, plan, stream);
        break;
    }
  }

  void linear_lt(const bf16* x, int64_t rows, const DeviceMatrix& w, const bf16* bias, void* y,
                 bool y_fp32, cudaStream_t stream);
};

void Projector::Impl::linear_lt(const bf16* x, int64_t rows, const DeviceMatrix& w,
                                const bf16* bias, void* y, bool y_fp32, cudaStream_t stream) {
  const int64_t elem = y_fp32 ? 4 : 2;
  // cuBLASLt's bias epilogue takes bf16 bias for a bf16 output; an fp32 output adds it after.
  const bf16* lt_bias = y_fp32 ? nullptr : bias;
  auto no_algorithm = [&](const char* what) {
    throw std::runtime_error(std::string("cuBLASLt has no algorithm for the ") + what + " GEMM " +
                             std::to_string(rows) + "x" + std::to_string(w.in) + "x" +
                             std::to_string(w.out));
  };
  if (w.format == DType::bf16) {
    LtCall call{LtKind::bf16, w.out, rows, w.in, w.out, w.data, x, y, y_fp32, lt_bias};
    if (!lt->run(call, stream)) no_algorithm("bf16");
    if (y_fp32) add_bias_fp32(static_cast<float*>(y), rows, w.out, bias, stream);
    last = ProjectionPath::lt_bf16;
    return;
  }
  if (input_format == DType::bf16) {  // int8 / int4 weight-only: dequantize chunks of rows
    auto* scratch = reinterpret_cast<bf16*>(at(layout.dequant_offset));
    int64_t chunk = layout.dequant_bytes / (w.in * 2);
    chunk = chunk >= w.out ? w.out : chunk / 64 * 64;
    const DequantSource source{
        w.format,    static_cast<const uint8_t*>(w.data), w.scales, w.group_scales, w.zeros, w.in,
        w.group_size};
    for (int64_t first = 0; first < w.out; first += chunk) {
      const int64_t count = std::min(chunk, w.out - first);
      dequantize_rows_bf16(source, first, count, scratch, stream);
      LtCall call{LtKind::bf16,
                  count,
                  rows,
                  w.in,
                  w.out,
                  scratch,
                  x,
                  static_cast<unsigned char*>(y) + first * elem,
                  y_fp32,
                  lt_bias ? lt_bias + first : nullptr};
      if (!lt->run(call, stream)) no_algorithm("bf16 (dequantized)");
    }
    if (y_fp32) add_bias_fp32(static_cast<float*>(y), rows, w.out, bias, stream);
    last = ProjectionPath::lt_dequant_bf16;
    return;
  }
  // Quantized input: rows to codes and scales, then an FP8 or int8 GEMM.
  if (w.in % 16 != 0 || w.out % 16 != 0) {
    refuse(
        "the tensor-core path of quantized inputs (cuBLASLt's FP8 and int8 GEMMs) needs in and "
        "out multiples of 16, given " +
        std::to_string(w.out) + "x" + std::to_string(w.in));
  }
  auto* codes = at(layout.rows_offset);
  auto* x_scales = reinterpret_cast<float*>(at(layout.scales_offset));
  const bool fp8 = input_format == DType::fp8;
  launch_prepare_rows(x, static_cast<int>(rows), static_cast<int>(w.in), nullptr, 0.0f,
                      fp8 ? RowQuant::fp8 : RowQuant::int8, nullptr, codes, x_scales, stream);
  if (fp8) {
    LtCall call{LtKind::fp8_outer, w.out,    rows,    w.in, w.out, w.data, codes, y, y_fp32,
                lt_bias,           w.scales, x_scales};
    if (lt->run(call, stream)) {
      if (y_fp32) add_bias_fp32(static_cast<float*>(y), rows, w.out, bias, stream);
      last = ProjectionPath::lt_fp8_outer;
      return;
    }
  }
  // fp32 / int32 results in chunks of rows, then a kernel applies the scales (and bias).
  void* acc = at(layout.acc_offset);
  const int64_t ld = accumulator_ld(w.out);
  const int64_t chunk_rows = std::max<int64_t>(1, layout.acc_bytes / (ld * 4));
  for (int64_t first = 0; first < rows; first += chunk_rows) {
    const int64_t count = std::min(chunk_rows, rows - first);
    LtCall call;
    call.kind = fp8 ? LtKind::fp8_plain : LtKind::int8;
    call.m = w.out;
    call.n = count;
    call.k = w.in;
    call.ldd = ld;
    call.a = w.data;
    call.b = codes + first * w.in;
    call.d = acc;
    call.d_fp32 = true;
    if (!lt->run(call, stream)) no_algorithm(fp8 ? "fp8" : "int8");
    scale_accumulators(acc, !fp8, count, w.out, ld, x_scales + first, w.scales, bias,
                       static_cast<unsigned char*>(y) + first * w.out * elem, y_fp32, stream);
  }
  last = fp8 ? ProjectionPath::lt_fp8_epilogue : ProjectionPath::lt_int8;
}

Projector::Projector(int64_t max_rows, int64_t max_in, int64_t max_out, DType format,
                     DType input_format, const ProjectionTuning& tuning)
    : impl_(std::make_unique<Impl>()) {
  GemvKind kind;
  if (!gemv_kind_for(format, input_format, &kind)) {
    refuse(std::string("no kernels for ") + std::string(dtype_name(format)) + " weights with " +
           std::string(dtype_name(input_format)) + " input");
  }
  if (max_rows < 1 || max_in < 1 || max_out < 1) refuse("sizes must be positive");
  Impl& m = *impl_;
  m.max_rows = max_rows;
  m.max_in = max_in;
  m.max_out = max_out;
  m.format = format;
  m.input_format = input_format;
  m.layout = projection_workspace(max_rows, max_in, max_out, format, input_format);
  m.arena = DeviceBuffer<unsigned char>(static_cast<size_t>(m.layout.total_bytes));
  INFERLAB_CUDA_CHECK(
      cudaMemset(m.at(m.layout.counters_offset), 0, static_cast<size_t>(m.layout.counters_bytes)));
  // (Synchronised: the caller's stream may not wait for the legacy default stream.)
  INFERLAB_CUDA_CHECK(cudaDeviceSynchronize());
  m.lt =
      std::make_unique<LtRunner>(m.at(m.layout.lt_offset), static_cast<size_t>(m.layout.lt_bytes));
  int device = 0;
  INFERLAB_CUDA_CHECK(cudaGetDevice(&device));
  INFERLAB_CUDA_CHECK(cudaDeviceGetAttribute(&m.sm_count, cudaDevAttrMultiProcessorCount, device));
  gemv_set_smem_limits();
  m.configured = tuning;
  m.default_gemv_rows();
  if (tuning.gemv_stream >= 0) m.stream_enabled = tuning.gemv_stream != 0;
  m.stream_pdl = tuning.gemv_pdl;
  m.tuning.splits = tuning.gemv_splits;
  m.tuning.prologue = tuning.gemv_prologue == GemvPrologueChoice::fused ? GemvPrologue::fused
                      : tuning.gemv_prologue == GemvPrologueChoice::prepared
                          ? GemvPrologue::prepared
                          : GemvPrologue::automatic;
  m.lt->set_tuning(tuning.lt_tune);
}

Projector::~Projector() = default;

int64_t Projector::workspace_bytes(int64_t max_rows, int64_t max_in, int64_t max_out, DType format,
                                   DType input_format) {
  return projection_workspace(max_rows, max_in, max_out, format, input_format).total_bytes;
}

void Projector::set_gemv(bool on) {
  if (on) {
    impl_->default_gemv_rows();
  } else {
    impl_->gemv_rows.fill(0);
  }
}

bool Projector::gemv() const {
  return std::any_of(impl_->gemv_rows.begin(), impl_->gemv_rows.end(),
                     [](int64_t rows) { return rows > 0; });
}

void Projector::set_gemv_stream(bool on) {
  impl_->stream_enabled = on;
}

void Projector::set_gemv_max_rows(int64_t rows) {
  impl_->gemv_rows.fill(std::clamp<int64_t>(rows, 0, kGemvMaxRows));
}

int64_t Projector::gemv_max_rows(const DeviceMatrix& w) const {
  GemvKind kind;
  return gemv_kind_for(w.format, w.input_format, &kind)
             ? impl_->gemv_rows[static_cast<size_t>(kind)]
             : 0;
}

void Projector::set_gemv_tuning(const GemvTuning& tuning) {
  impl_->tuning = tuning;
}

ProjectionPath Projector::last_path() const {
  return impl_->last;
}

size_t Projector::lt_plans() const {
  return impl_->lt->plans();
}

bool Projector::takes_gemv(int64_t rows, const DeviceMatrix& w) const {
  return impl_->takes(rows, w);
}

bool Projector::takes_rope_epilogue(int64_t rows, const DeviceMatrix& w) const {
  return impl_->takes(rows, w) && impl_->streams(rows, w);
}

void Projector::linear(const __nv_bfloat16* x, int64_t rows, const DeviceMatrix& w,
                       const __nv_bfloat16* bias, void* y, bool y_fp32, cudaStream_t stream) {
  Impl& m = *impl_;
  m.check_matrix(w, rows);
  if (rows == 0 || w.out == 0) return;
  if (x == nullptr || y == nullptr) refuse("x or y is null");
  if (!aligned16(x)) refuse("x is not 16-byte aligned");
  if (m.takes(rows, w) && m.streams(rows, w)) {
    GemvStreamCall call;
    call.w = &w;
    call.rows = static_cast<int>(rows);
    call.x = x;
    call.bias = bias;
    call.y = y;
    call.y_fp32 = y_fp32;
    call.pdl = m.pdl_for(w);
    launch_gemv_stream(call, stream);
    m.last = ProjectionPath::gemv_stream;
    return;
  }
  if (m.takes(rows, w)) {
    const GemvPlan plan = m.plan(rows, w, false, false);
    GemvParams p;
    p.epilogue = GemvEpilogue::store;
    p.y_fp32 = y_fp32;
    p.bias = bias;
    p.y = y;
    m.run_gemv(plan, p, w, x, rows, nullptr, 0.0f, stream);
    return;
  }
  m.linear_lt(x, rows, w, bias, y, y_fp32, stream);
}

void Projector::gemv_fused(const GemvFused& args, int64_t rows, const DeviceMatrix& w,
                           cudaStream_t stream) {
  Impl& m = *impl_;
  m.check_matrix(w, rows);
  if (!m.takes(rows, w)) {
    refuse("gemv_fused of " + std::to_string(rows) + " rows of a " + std::to_string(w.out) + "x" +
           std::to_string(w.in) + " " + std::string(dtype_name(w.format)) +
           " matrix: the GEMV does not take it (takes_gemv is false)");
  }
  if (args.x == nullptr || !aligned16(args.x)) refuse("x is null or not 16-byte aligned");
  if (args.norm_weight != nullptr && !aligned16(args.norm_weight)) {
    refuse("norm_weight is not 16-byte aligned");
  }
  const bool swiglu = args.epilogue == GemvFused::Epilogue::swiglu;
  GemvParams p;
  switch (args.epilogue) {
    case GemvFused::Epilogue::store:
      p.epilogue = GemvEpilogue::store;
      break;
    case GemvFused::Epilogue::residual_add:
      p.epilogue = GemvEpilogue::residual_add;
      break;
    case GemvFused::Epilogue::swiglu:
      p.epilogue = GemvEpilogue::swiglu;
      break;
    case GemvFused::Epilogue::rope_kv_write:  // the streaming GEMV's only (checked below)
      break;
  }
  if (args.epilogue == GemvFused::Epilogue::rope_kv_write) {
    const GemvFused::Rope& r = args.rope;
    if (!m.streams(rows, w)) refuse("the RoPE epilogue runs on the streaming GEMV only");
    if (!gemv_stream_rope_fits(w, r)) {
      refuse(
          "the RoPE epilogue needs the fused QKV matrix of (heads + 2 KV heads) x an even "
          "head_dim rows");
    }
    if (r.positions == nullptr || r.slots == nullptr || r.inv_freq == nullptr ||
        r.k_cache == nullptr || r.v_cache == nullptr) {
      refuse("the RoPE epilogue needs positions, slots, inv_freq and both caches");
    }
  }
  if (args.epilogue == GemvFused::Epilogue::residual_add) {
    if (args.residual == nullptr) refuse("residual_add without a residual");
    const auto* r0 = reinterpret_cast<const unsigned char*>(args.residual);
    const auto* x0 = reinterpret_cast<const unsigned char*>(args.x);
    if (r0 < x0 + rows * w.in * 2 && x0 < r0 + rows * w.out * 2) refuse("residual overlaps x");
  } else if (args.y == nullptr) {
    refuse("y is null");
  }
  if (swiglu && w.out % 2 != 0) refuse("SwiGLU needs the fused gate/up matrix (even rows)");
  if (rows == 0) return;
  if (m.streams(rows, w)) {
    GemvStreamCall call;
    call.w = &w;
    call.rows = static_cast<int>(rows);
    call.x = args.x;
    call.norm_weight = args.norm_weight;
    call.eps = args.eps;
    call.epilogue = args.epilogue;
    call.bias = args.bias;
    call.y = args.y;
    call.residual = args.residual;
    call.rope = args.rope;
    call.pdl = m.pdl_for(w);
    launch_gemv_stream(call, stream);
    m.last = ProjectionPath::gemv_stream;
    return;
  }
  const GemvPlan plan = m.plan(rows, w, swiglu, args.norm_weight != nullptr);
  if (!plan.ok) refuse(std::string("GEMV plan: ") + plan.why);
  p.bias = args.bias;
  p.y = args.y;
  p.residual = args.residual;
  m.run_gemv(plan, p, w, args.x, rows, args.norm_weight, args.eps, stream);
}

}  // namespace inferlab::engine::cuda
