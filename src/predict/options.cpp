#include "predict/options.hpp"

#include <string>

#include "util/field_error.hpp"

namespace inferlab {

namespace {
void require_range(const char* field, int64_t value, int64_t max_value) {
  if (value < 1 || value > max_value) {
    throw FieldError(std::string("`") + field + "` must be in [1, " + std::to_string(max_value) +
                     "], got " + std::to_string(value));
  }
}
}  // namespace

void validate_sizes(const PredictOptions& o) {
  require_range("batch", o.batch, 1 << 20);
  require_range("input_tokens", o.input_tokens, 1 << 24);
  require_range("output_tokens", o.output_tokens, 1 << 24);
  require_range("tp", o.tp, 1024);
  if (o.batch * (o.input_tokens + o.output_tokens) > (int64_t{1} << 36)) {
    throw FieldError(
        "`batch` x (`input_tokens` + `output_tokens`) is over 2^36 tokens; no GPU holds that");
  }
  if (!(o.gpu_memory_utilization > 0.0 && o.gpu_memory_utilization <= 1.0)) {
    throw FieldError("`gpu_memory_utilization` must be in (0, 1]");
  }
}

Precision resolve_precision(const PredictOptions& o, const HardwareSpec& hw) {
  Precision p;
  p.float_dtype = hw.supports(DType::bf16) ? DType::bf16 : DType::fp16;
  p.weights = o.weights.value_or(p.float_dtype);
  p.activations = o.activations.value_or(p.float_dtype);
  p.kv = o.kv.value_or(p.float_dtype);
  auto name = [](DType d) { return std::string(dtype_name(d)); };
  auto allowed = [](DType d, std::initializer_list<DType> list) {
    for (DType a : list) {
      if (a == d) return true;
    }
    return false;
  };
  if (!allowed(p.weights, {DType::bf16, DType::fp16, DType::fp8, DType::int8, DType::int4})) {
    throw FieldError("`weights` " + name(p.weights) +
                     " is not supported; use bf16, fp16, fp8, "
                     "int8 or int4");
  }
  if (!allowed(p.kv, {DType::bf16, DType::fp16, DType::fp8, DType::int8})) {
    throw FieldError("`kv` " + name(p.kv) + " is not supported; use bf16, fp16, fp8 or int8");
  }
  if (!allowed(p.activations, {DType::bf16, DType::fp16, DType::fp8, DType::int8})) {
    throw FieldError("`activations` " + name(p.activations) +
                     " is not supported; use bf16, fp16, fp8 or int8");
  }
  if ((p.weights == DType::bf16 || p.weights == DType::fp16) && !hw.supports(p.weights)) {
    throw FieldError(hw.name + " has no " + name(p.weights) + " matrix units; use `weights` " +
                     name(p.float_dtype));
  }
  if (o.framework == Framework::inferlab) {
    if (p.activations != p.float_dtype && p.activations != DType::int8) {
      throw FieldError("`activations` " + name(p.activations) +
                       " is not an inferlab engine format; use " + name(p.float_dtype) +
                       " or int8 (with int8 weights); fp8 weights quantize the GEMM inputs to "
                       "fp8 themselves");
    }
    // The engine's fp8 weights run FP8 GEMMs: the inputs are quantized per row to fp8.
    if (p.weights == DType::fp8) p.activations = DType::fp8;
  }
  bool w8a8 = is_8bit_or_less(p.activations);
  if (w8a8) {
    if (p.weights != p.activations) {
      throw FieldError("`activations` " + name(p.activations) + " needs `weights` " +
                       name(p.activations) + " (W8A8 runs both in the same 8-bit format)");
    }
    if (!hw.supports(p.activations) && o.framework == Framework::inferlab &&
        p.weights == DType::fp8) {
      throw InputError(hw.name +
                       " has no fp8 matrix units, which the inferlab engine's fp8 "
                       "weights need; it supports: " +
                       join_names(hw.supported_dtype_names()));
    }
    if (!hw.supports(p.activations)) {
      throw InputError(
          hw.name + " has no " + name(p.activations) +
          " matrix units for W8A8; it supports: " + join_names(hw.supported_dtype_names()));
    }
    p.gemm_compute = p.activations;
  } else {
    // Weight-only quantization: weights are dequantized and multiplied in 16-bit.
    p.activations = p.float_dtype;
    p.gemm_compute = p.float_dtype;
  }
  return p;
}

KernelPlan kernel_plan_of(const PredictOptions& o) {
  KernelPlan plan = with_projection_layout(
      kernel_plan(o.framework, o.flash_attention, o.gemv, o.fusion), o.projection_layout);
  plan.engine_rope_in_qkv = plan.engine && o.rope_in_qkv;
  plan.engine_early_cache_reads = plan.engine && o.early_cache_reads;
  return plan;
}

}  // namespace inferlab
