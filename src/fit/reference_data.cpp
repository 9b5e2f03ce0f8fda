#include "fit/reference_data.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "model/op_builders.hpp"
#include "predict/framework.hpp"
#include "util/error.hpp"
#include "util/json_file.hpp"

namespace inferlab {

namespace {

// One row of a reference's "ops" (or "ops_pending") as the Op that models what PyTorch ran.
MeasuredOp measured_op_from_row(const nlohmann::json& row, const std::string& context) {
  const DType bf16 = DType::bf16;
  const std::string kind = require_string(row, "op", context);
  auto n = [&](const char* key) { return require_count(row, key, context + " " + kind); };
  MeasuredOp m;
  m.measured_s = require_number(row, "median_s", context);
  if (kind == "linear" || kind == "linear_bias") {
    // cuBLAS adds the bias in the GEMM's epilogue (the same kernel, "..._bias_TNT").
    m.op = make_gemm_op("linear", n("m"), n("n"), n("k"), bf16, bf16, bf16, bf16,
                        kind == "linear_bias");
    m.label = fmt::format("{} m={} n={} k={}", kind, n("m"), n("n"), n("k"));
  } else if (kind == "attention_prefill" || kind == "attention_decode") {
    bool prefill = kind == "attention_prefill";
    AttentionShape s{n("batch"),
                     n("heads"),
                     n("kv_heads"),
                     n("head_dim"),
                     prefill ? n("seq") : 1,
                     prefill ? n("seq") : n("context"),
                     prefill};
    m.op = make_attention_op("attention", s, bf16, bf16);
    m.label = fmt::format("{} b={} d={} kv_len={}", kind, s.batch, s.head_dim, s.kv_len);
  } else if (kind == "rmsnorm") {
    m.op = make_rmsnorm_op("rmsnorm", n("tokens"), n("hidden"), bf16);
    m.label = fmt::format("rmsnorm t={} h={}", n("tokens"), n("hidden"));
  } else if (kind == "add") {
    m.op = make_add_op("add", n("tokens"), n("hidden"), bf16);
    m.label = fmt::format("add t={} h={}", n("tokens"), n("hidden"));
  } else if (kind == "embedding") {
    m.op = make_embedding_op("embedding", n("tokens"), n("hidden"), bf16);
    m.label = fmt::format("embedding t={} h={}", n("tokens"), n("hidden"));
  } else if (kind == "silu_mul_eager" || kind == "silu_mul_halves") {
    // F.silu(g) * u: silu reads g, writes s; mul reads s and u, writes out. On the halves of
    // one fused [tokens, row_stride] gate/up output both kernels read strided views.
    m.op = make_silu_mul_op("silu_mul", n("tokens"), n("intermediate"), bf16);
    m.op.kernels = 2;
    m.op.activation_bytes *= 5.0 / 3.0;
    if (kind == "silu_mul_halves") {
      if (n("row_stride") < 2 * n("intermediate")) {
        throw InputError(context +
                         ": silu_mul_halves row_stride must be at least "
                         "2 x intermediate (the halves of one row)");
      }
      m.op.strided_input = true;
    }
    m.label = fmt::format("{} t={} i={}", kind == "silu_mul_eager" ? "silu*mul" : kind, n("tokens"),
                          n("intermediate"));
  } else if (kind == "rope" || kind == "rope_fused_qkv") {
    // PlainLlama's RoPE, as the PyTorch kernel plan runs it. On q and k as views of one fused
    // QKV output only the views' row stride differs: the same kernels and bytes (measured 2-5%
    // slower than on separate q and k outputs, H100 2026-11-23).
    m.op = make_rope_op("rope", n("batch") * n("tokens"), n("heads") * n("head_dim"),
                        n("kv_heads") * n("head_dim"),
                        kernel_plan(Framework::pytorch, true).rope_kernels_per_tensor, bf16);
    m.label = fmt::format("{} b={} t={} heads={} d={}", kind, n("batch"), n("tokens"), n("heads"),
                          n("head_dim"));
  } else if (kind == "softmax" || kind == "softmax_fp32") {
    m.op = make_softmax_op("softmax", n("rows"), n("cols"), kind == "softmax" ? bf16 : DType::fp32);
    m.label = fmt::format("{} r={} c={}", kind, n("rows"), n("cols"));
  } else if (kind == "softmax_bf16_to_fp32") {
    // torch.softmax(x_bf16, dtype=float32) (Hugging Face eager attention): a cast kernel
    // (bf16 read, fp32 written), then the fp32 softmax (profiled, H100 2026-11-23).
    m.op = make_softmax_op("softmax", n("rows"), n("cols"), DType::fp32);
    m.op.kernels = 2;
    m.op.activation_bytes += static_cast<double>(n("rows")) * static_cast<double>(n("cols")) *
                             (dtype_bytes(bf16) + dtype_bytes(DType::fp32));
    m.label = fmt::format("{} r={} c={}", kind, n("rows"), n("cols"));
  } else {
    throw InputError(context + ": unknown measured op '" + kind + "'");
  }
  m.held_out = optional_string(row, "split", "fit", context) == "holdout";
  return m;
}

}  // namespace

std::vector<MeasuredOp> measured_ops_from_reference(const nlohmann::json& reference,
                                                    const std::string& context) {
  if (!reference.contains("ops") || !reference["ops"].is_array()) {
    throw InputError(context + ": missing array 'ops'");
  }
  std::vector<MeasuredOp> out;
  // A family run keeps its rows of newer op kinds under "ops_pending" until they are merged.
  for (const char* key : {"ops", "ops_pending"}) {
    if (!reference.contains(key)) continue;
    if (!reference[key].is_array()) throw InputError(context + ": '" + key + "' must be an array");
    for (const auto& row : reference[key]) out.push_back(measured_op_from_row(row, context));
  }
  return out;
}

double fastest_measured_s(const std::vector<MeasuredOp>& measured) {
  if (measured.empty()) return 0.0;
  double fastest = measured.front().measured_s;
  for (const auto& m : measured) fastest = std::min(fastest, m.measured_s);
  return fastest;
}

std::vector<MeasuredOp> measured_ops_from_profile(const nlohmann::json& profile,
                                                  const std::string& context) {
  std::vector<MeasuredOp> out;
  if (!profile.contains("sweeps") || !profile["sweeps"].is_object()) {
    throw InputError(context + ": missing object 'sweeps'");
  }
  const auto& sweeps = profile["sweeps"];
  const DType bf16 = DType::bf16;
  for (const auto& row : sweeps.value("gemm", nlohmann::json::array())) {
    int64_t m = require_count(row, "m", context), n = require_count(row, "n", context),
            k = require_count(row, "k", context);
    out.push_back({make_gemm_op("gemm", m, n, k, bf16, bf16, bf16, bf16),
                   fmt::format("probe gemm m={} n={} k={}", m, n, k),
                   require_number(row, "median_s", context),
                   optional_string(row, "model", "", context) == kHeldOutProbeModel});
  }
  for (const auto& row : sweeps.value("llm_kernels", nlohmann::json::array())) {
    const std::string kernel = require_string(row, "kernel", context);
    if (!row.contains("shape") || !row["shape"].is_object())
      throw InputError(context + " " + kernel + ": missing object 'shape'");
    const auto& shape = row["shape"];
    auto n = [&](const char* key) { return require_count(shape, key, context + " " + kernel); };
    MeasuredOp m;
    m.measured_s = require_number(row, "median_s", context);
    m.label = "probe " + kernel;
    if (kernel == "add") {
      m.op = make_add_op("add", n("tokens"), n("hidden"), bf16);
    } else if (kernel == "silu_mul") {
      m.op = make_silu_mul_op("silu_mul", n("tokens"), n("intermediate"), bf16);
    } else if (kernel == "softmax" || kernel == "rope" || kernel == "rmsnorm") {
      // The probe's softmax (three passes over a row) and RoPE (angles computed per element)
      // are plain kernels, slower than the tuned ones frameworks run; its RMSNorm (256 threads
      // a row, 16-byte loads) takes a quarter of the round trips of PyTorch's (128 threads,
      // 8-byte loads) and runs 6.0 us where PyTorch's runs 10.4 (one row of 4096). They
      // describe the GPU in the profile but would bias the framework's model, so they are not
      // fitted.
      continue;
    } else {
      throw InputError(context + ": unknown kernel '" + kernel + "' in sweeps.llm_kernels");
    }
    out.push_back(m);
  }
  return out;
}

}  // namespace inferlab
