#include "model/engine_blocks.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "model/engine_gemv_rows.hpp"
#include "model/family_spec.hpp"
#include "model/model_family.hpp"
#include "model/moe_routing.hpp"
#include "model/op_builders.hpp"

namespace inferlab {

bool is_engine_kernel_class(const std::string& name) {
  return std::find(kEngineKernelClasses.begin(), kEngineKernelClasses.end(), name) !=
         kEngineKernelClasses.end();
}

bool engine_runs_model(const ModelConfig& model, int tp) {
  const std::string family = model_family(model).name;
  return tp >= 1 && (family == "llama" || family == "mixtral");
}

bool engine_moe_capturable(int64_t tokens, const ModelConfig& model, int64_t inter) {
  return engine_moe_form(tokens, model.num_experts, model.experts_per_token, model.hidden_size,
                         inter) != MoeExpertForm::gemm;
}

int64_t engine_gemv_max_rows(DType weights) {
  return weights == DType::bf16 || weights == DType::fp16 ? kEngineGemvRowsBf16
                                                          : kEngineGemvRowsQuantized;
}

int64_t engine_dequant_chunk_rows(int64_t in_features) {
  const auto rows =
      static_cast<int64_t>(kEngineDequantChunkBytes / (2.0 * static_cast<double>(in_features)));
  return std::max<int64_t>(64, rows / 64 * 64);
}

double engine_weight_bytes(int64_t out_features, int64_t in_features, DType format,
                           int64_t group_size) {
  const double out = static_cast<double>(out_features), in = static_cast<double>(in_features);
  switch (format) {
    case DType::int8:
    case DType::fp8:
      return out * in + out * 4.0;
    case DType::int4: {
      const double groups = std::ceil(in / static_cast<double>(std::max<int64_t>(1, group_size)));
      return out * in / 2.0 + out * groups * (2.0 + 1.0);
    }
    default:
      return out * in * dtype_bytes(format);
  }
}

double engine_kv_vector_bytes(int64_t head_dim, DType kv) {
  const double values = static_cast<double>(head_dim) * dtype_bytes(kv);
  return is_8bit_or_less(kv) ? values + 4.0 : values;
}

const char* engine_weight_format_label(const Precision& p) {
  if (p.weights == DType::int8 && p.activations == DType::int8) return "w8a8";
  switch (p.weights) {
    case DType::int8:
      return "int8";
    case DType::int4:
      return "int4";
    case DType::fp8:
      return "fp8";
    case DType::fp16:
      return "fp16";
    default:
      return "bf16";
  }
}

const char* engine_kv_format_label(DType kv) {
  switch (kv) {
    case DType::int8:
      return "int8";
    case DType::fp8:
      return "fp8";
    case DType::fp16:
      return "fp16";
    default:
      return "bf16";
  }
}

namespace {

// Query tokens per CTA of the naive P·V kernel in prefills (attention_naive.cu's kGroup).
constexpr int64_t kNaiveGroup = 16;

// What the engine does around a GEMV's product when fusion is on (GemvFused in
// engine/cuda/projection.hpp).
enum class Fused { none, norm_prologue, norm_rope, residual_epilogue, norm_swiglu };

struct Projection {
  const char* name;
  const char* kernel_class;
  int64_t rows, out, in;
  bool bias = false;
  bool fp32_out = false;  // the LM head's logits
  Fused fused = Fused::none;
};

class EngineBuilder {
 public:
  EngineBuilder(const ModelConfig& model, const StepShape& shape, const Precision& p,
                const KernelPlan& plan, const ShardDims& s, std::vector<Op>& ops)
      : model_(model),
        shape_(shape),
        p_(p),
        plan_(plan),
        s_(s),
        ops_(ops),
        tokens_(shape.batch * shape.new_tokens),
        q_dim_(s.q_heads * s.head_dim),
        kv_dim_(s.kv_heads * s.head_dim),
        fb_(dtype_bytes(p.float_dtype)),
        weight_label_(engine_weight_format_label(p)),
        kv_label_(engine_kv_format_label(p.kv)) {}

  bool on_gemv(int64_t rows) const {
    return plan_.engine_gemv && rows <= engine_gemv_max_rows(p_.weights);
  }
  // Fusion acts on the layers' projections when they run on the GEMV path (a mixture of
  // experts' layers run unfused).
  bool fused_layers() const { return plan_.engine_fusion && on_gemv(tokens_) && !model_.is_moe(); }
  // Whether `rows` rows of a projection `in` wide take the streaming GEMV, where its staged input
  // fits (wider rows: the tensor-core GEMV); the GEMV path (on_gemv) assumed.
  bool streams(int64_t rows, int64_t in) const {
    return rows <= kEngineGemvStreamMaxRows &&
           engine_gemv_stream_staged_bytes(p_.weights, p_.activations == DType::int8, rows, in) <=
               kEngineGemvStreamStageBytes;
  }

  void build_step() {
    const bool fused = fused_layers();
    add_embedding();
    if (!fused) add(norm_op("input_norm", tokens_, false), Scope::pre_layers, 1);
    const int64_t h = s_.hidden, inter = s_.intermediate;
    const int64_t layers = model_.num_layers;
    const auto per_layer = Scope::per_layer;
    const bool qk_norm = family_spec(model_).ops.qk_norm;
    const bool rope_in_qkv = engine_rope_in_qkv(plan_.engine_rope_in_qkv, fused,
                                                fused && streams(tokens_, h), p_.kv, qk_norm);
    add_projection(
        {"qkv_proj", "gemm_qkv", tokens_, q_dim_ + 2 * kv_dim_, h, model_.qkv_bias, false,
         rope_in_qkv ? Fused::norm_rope
         : fused     ? Fused::norm_prologue
                     : Fused::none},
        per_layer, layers);
    // Qwen3 (its family's qk_norm): each query and key head RMS-normalised before RoPE.
    if (qk_norm) {
      Op op = make_rmsnorm_op("qk_norm", tokens_ * (s_.q_heads + s_.kv_heads), s_.head_dim,
                              p_.float_dtype);
      op.tag = tag("norm", "rms", "bf16");
      add(op, per_layer, layers);
    }
    if (!rope_in_qkv) add_rope_kv_write();
    build_context_ops();
    add_projection({"o_proj", "gemm_o", tokens_, h, q_dim_, false, false,
                    fused ? Fused::residual_epilogue : Fused::none},
                   per_layer, layers);
    add_all_reduce("attn_all_reduce");
    if (!fused) add(norm_op("post_attn_add_norm", tokens_, true), per_layer, layers);
    if (model_.is_moe()) {
      add_experts();
    } else {
      add_projection({"gate_up_proj", "gemm_gate_up", tokens_, 2 * inter, h, false, false,
                      fused ? Fused::norm_swiglu : Fused::none},
                     per_layer, layers);
      if (!fused) add_silu_mul(tokens_);
      add_projection({"down_proj", "gemm_down", tokens_, h, inter, false, false,
                      fused ? Fused::residual_epilogue : Fused::none},
                     per_layer, layers);
    }
    add_all_reduce("mlp_all_reduce");
    // Unfused, each layer ends with the next one's add + RMSNorm (the last: the final norm);
    // fused, the residual is already summed and the final norm is a plain RMSNorm.
    if (fused) {
      add(norm_op("final_norm", tokens_, false), Scope::post_layers, 1);
    } else {
      add(norm_op("mlp_add_next_norm", tokens_, true), per_layer, layers);
    }
    add_head();
  }

  void build_context_ops() {
    if (plan_.flash_attention) {
      add_flash_attention();
    } else {
      add_naive_attention();
    }
  }

 private:
  void add(Op op, Scope scope, int64_t count) {
    op.scope = scope;
    op.count = count;
    ops_.push_back(op);
  }

  static KernelTag tag(const char* kernel_class, const char* path, const char* format) {
    return {kernel_class, path, format, 1};
  }

  Op norm_op(const char* name, int64_t rows, bool with_add) const {
    Op op = with_add ? make_add_rmsnorm_op(name, rows, s_.hidden, p_.float_dtype)
                     : make_rmsnorm_op(name, rows, s_.hidden, p_.float_dtype);
    op.tag = tag("norm", "rms", "bf16");
    return op;
  }

  void add_embedding() {
    Op op = make_embedding_op("embedding", tokens_, s_.hidden, p_.float_dtype);
    op.activation_bytes = static_cast<double>(tokens_ * s_.hidden) * fb_ + 4.0 * tokens_;
    op.tag = tag("embedding", "gather", "bf16");
    add(op, Scope::pre_layers, 1);
  }

  void add_rope_kv_write() {
    const double t = static_cast<double>(tokens_);
    Op op;
    op.name = "rope_kv_write";
    op.kind = OpKind::rope_kv_write;
    op.compute_dtype = p_.float_dtype;
    op.flops = 6.0 * t * static_cast<double>(q_dim_ + kv_dim_);
    // The fused QKV rows in, the rotated queries back in place; keys and values to the cache.
    op.activation_bytes = t * static_cast<double>(q_dim_ + 2 * kv_dim_) * fb_ +
                          t * static_cast<double>(q_dim_) * fb_ + t * 8.0;  // positions, slots
    op.kv_bytes =
        2.0 * t * static_cast<double>(s_.kv_heads) * engine_kv_vector_bytes(s_.head_dim, p_.kv);
    op.tag = tag("rope_kv_write", "rope", kv_label_);
    add(op, Scope::per_layer, model_.num_layers);
  }

  AttentionShape attention_shape() const {
    return {shape_.batch,      s_.q_heads,     s_.kv_heads,          s_.head_dim,
            shape_.new_tokens, shape_.context, shape_.new_tokens > 1};
  }

  // Keys and values the step's sequences read from the cache (each once per sequence: the query
  // heads of a group share them, and so do the query tiles of a prefill, through L2).
  double kv_read_bytes() const {
    return 2.0 * static_cast<double>(shape_.batch * shape_.context * s_.kv_heads) *
           engine_kv_vector_bytes(s_.head_dim, p_.kv);
  }

  void add_flash_attention() {
    const AttentionShape a = attention_shape();
    Op op = make_attention_op("attention", a, p_.float_dtype, p_.kv);
    op.kv_bytes = kv_read_bytes();
    // The streamed decode (bf16 caches) that reads earlier passes' rows before its grid wait has
    // a key of its own (falling back to flash_decode's), and is priced as a programmatic launch:
    // in a graph those reads overlap the previous kernel's end, which its profiled time does not
    // show (as the int4 GEMV's early weight loads).
    const bool early = plan_.engine_early_cache_reads && p_.kv == DType::bf16 && a.q_len == 1;
    op.programmatic_launch = early;
    op.tag = tag("attention",
                 a.q_len > 1 ? "flash_prefill"
                 : early     ? "flash_decode_early"
                             : "flash_decode",
                 kv_label_);
    // The tiled prefill's grid, one CTA per 128 query rows of a head (attention_prefill_hopper.cu's
    // kBM): each CTA's fixed cost is priced per wave (EngineKernelParams::cta_fixed_s).
    if (a.q_len > 1) op.grid_ctas = a.batch * a.q_heads * ((a.q_len + 127) / 128);
    add(op, Scope::per_layer, model_.num_layers);
  }

  // Scores of every (query head, query row, key) in fp32: written by Q K^T, read and written
  // by the softmax, read by P V.
  void add_naive_attention() {
    const AttentionShape a = attention_shape();
    const double b = static_cast<double>(a.batch), hq = static_cast<double>(a.q_heads);
    const double d = static_cast<double>(a.head_dim), q = static_cast<double>(a.q_len);
    const double kv = static_cast<double>(a.kv_len);
    const double scores = b * hq * q * kv;
    const double q_bytes = b * q * hq * d * fb_;
    // Prefills (tokens grouped per CTA) and decodes (one token per CTA) run the kernels in two
    // ways (attention_naive.cu), each with its own calibration.
    const KernelTag naive = tag("attention", a.q_len > 1 ? "naive_prefill" : "naive", kv_label_);
    Op qk;
    qk.name = "attn_scores";
    qk.kind = OpKind::attention_scores;
    qk.compute_dtype = p_.float_dtype;
    qk.gemm = {a.q_len, a.kv_len, a.head_dim, a.batch * a.q_heads};
    qk.flops = 2.0 * scores * d;
    qk.activation_bytes = q_bytes + 4.0 * scores;
    qk.kv_bytes = kv_read_bytes() / 2.0;  // the keys
    qk.context_dependent = true;
    qk.tag = naive;
    qk.tag.marks = 0;
    add(qk, Scope::per_layer, model_.num_layers);
    Op sm = make_softmax_op("attn_softmax", a.batch * a.q_heads * a.q_len, a.kv_len, DType::fp32);
    sm.context_dependent = true;
    sm.tag = naive;
    sm.tag.marks = 0;
    add(sm, Scope::per_layer, model_.num_layers);
    Op pv;
    pv.name = "attn_context";
    pv.kind = OpKind::attention_context;
    pv.compute_dtype = p_.float_dtype;
    pv.gemm = {a.q_len, a.head_dim, a.kv_len, a.batch * a.q_heads};
    pv.flops = 2.0 * scores * d;
    pv.activation_bytes = 4.0 * scores + q_bytes;
    pv.kv_bytes = kv_read_bytes() / 2.0;  // the values
    pv.context_dependent = true;
    pv.tag = naive;
    // Its CTAs walk their positions one value row after another (attention_naive.cu): one
    // (token, head) each in decode and mixed batches, a group of kNaiveGroup tokens of a head in
    // prefills, reading the rows their tokens see (causal: on average the cached ones and half
    // the new) and those tokens' P rows.
    const bool grouped = a.q_len > 1;
    const int64_t group = grouped ? kNaiveGroup : 1;
    const double visible = kv - (q - 1.0) / 2.0;
    pv.grid_ctas = a.q_heads * ((a.batch * a.q_len + group - 1) / group);
    pv.bytes_per_cta =
        visible * (engine_kv_vector_bytes(s_.head_dim, p_.kv) + 4.0 * static_cast<double>(group));
    add(pv, Scope::per_layer, model_.num_layers);
  }

  // Tensor parallelism: the row-parallel projection's partial sums (tokens × hidden, bf16)
  // summed over the GPUs, by the one-shot kernel up to kEngineOneShotMaxBytes, else NCCL. The
  // embedding is replicated in the engine, so no all-reduce follows it.
  void add_all_reduce(const char* name) {
    if (s_.tp <= 1) return;
    const double bytes = static_cast<double>(tokens_ * s_.hidden) * fb_;
    Op op = make_all_reduce_op(name, bytes, static_cast<int>(s_.tp));
    op.tag = tag("all_reduce", bytes <= kEngineOneShotMaxBytes ? "one_shot" : "nccl", "bf16");
    add(op, Scope::per_layer, model_.num_layers);
  }

  void add_silu_mul(int64_t rows) {
    Op op = make_silu_mul_op("silu_mul", rows, s_.intermediate, p_.float_dtype);
    op.tag = tag("silu_mul", "halves", "bf16");
    add(op, Scope::per_layer, model_.num_layers);
  }

  void add_head() {
    const int64_t b = shape_.batch;
    Op gather = make_embedding_op("lm_rows_gather", b, s_.hidden, p_.float_dtype);
    gather.scope = Scope::post_layers;
    gather.activation_bytes = static_cast<double>(b * s_.hidden) * fb_ + 4.0 * b;
    gather.tag = tag("embedding", "gather", "bf16");
    add(gather, Scope::post_layers, 1);
    add_projection({"lm_head", "lm_head", b, s_.vocab, s_.hidden, false, true, Fused::none},
                   Scope::post_layers, 1);
    if (s_.tp > 1) {
      // Every rank's fp32 logits of its vocab shard gathered by NCCL, then put back in
      // vocabulary order (a kernel the engine marks as an embedding-class gather).
      Op gather = make_all_gather_op("logits_all_gather", static_cast<double>(b * s_.vocab) * 4.0,
                                     static_cast<int>(s_.tp));
      gather.tag = tag("all_gather", "nccl", "fp32");
      add(gather, Scope::post_layers, 1);
      Op unshard = make_embedding_op("logits_unshard", b, model_.vocab_size, DType::fp32);
      unshard.weight_bytes = 0;
      unshard.activation_bytes = 8.0 * static_cast<double>(b * model_.vocab_size);
      unshard.tag = tag("embedding", "gather", "bf16");
      add(unshard, Scope::post_layers, 1);
    }
    Op sample;
    sample.name = "sampling";
    sample.kind = OpKind::sampling;
    sample.compute_dtype = p_.float_dtype;
    sample.rows = b;
    sample.cols = model_.vocab_size;
    sample.flops = static_cast<double>(b * model_.vocab_size);
    sample.activation_bytes = static_cast<double>(b * model_.vocab_size) * 4.0 + 4.0 * b;
    sample.tag = tag("sampling", "sample", "bf16");
    add(sample, Scope::post_layers, 1);
  }

  // A mixture of experts' MLP (engine/cuda/cuda_moe.cpp): the router with its top-k (and the
  // sort of the slots by expert for the grouped kernels and the GEMMs); the experts in the form
  // engine_moe_form picks (slot kernels, grouped kernels, one grouped tensor-core GEMM each for
  // gate/up with SiLU x mul and for down, or a cuBLASLt GEMM per expert reached with SiLU x mul
  // over all slots between; the last two gather the rows first); the weighted combine.
  // The experts a step reaches are those its routing reaches in expectation
  // (expected_active_experts: the model's measured routing where it has one, else uniform).
  void add_experts() {
    const int64_t h = s_.hidden, inter = s_.intermediate, layers = model_.num_layers;
    const int64_t experts = model_.num_experts, top_k = model_.experts_per_token;
    const int64_t slots = tokens_ * top_k;
    const double t = static_cast<double>(tokens_), n = static_cast<double>(slots);
    const double reached = shape_.routed_experts > 0.0
                               ? shape_.routed_experts
                               : expected_active_experts(model_, shape_.batch, shape_.new_tokens);
    const MoeExpertForm form = engine_moe_form(tokens_, experts, top_k, h, inter);
    const bool decode_kernels = form == MoeExpertForm::slots || form == MoeExpertForm::grouped;
    // The router (engine_moe_route_form), then the sort unless slot by slot.
    const int sort_kernels = form == MoeExpertForm::slots ? 0 : 1;
    const MoeRouteForm route_form = engine_moe_route_form(tokens_, experts);
    // Every moe_route op of a step under one path, named by the router's form and whether the
    // GEMMs' gather follows: the engine's calibration fits a class's time at a step under one
    // key (fit/fit_engine.cpp), so each combination is its own key, priced as it was fitted.
    const bool gathers = !decode_kernels;
    const char* route_path =
        route_form == MoeRouteForm::gemm    ? (gathers ? "gemm_select_gather" : "gemm_select")
        : route_form == MoeRouteForm::split ? (gathers ? "route_split_gather" : "route_split")
                                            : (gathers ? "route_gather" : "route");
    Op route;
    route.name = "moe_route";
    route.kind = OpKind::gemm;
    route.gemm = {tokens_, experts, h, 1};
    route.flops = 2.0 * t * static_cast<double>(experts * h);
    route.weight_bytes = static_cast<double>(experts * h) * fb_;
    if (route_form == MoeRouteForm::gemm) {
      // A cuBLASLt GEMM into fp32 logits, then the selection and the sort.
      route.compute_dtype = p_.float_dtype;
      route.activation_bytes = t * static_cast<double>(h) * fb_ + 4.0 * t * experts;
      route.tag = tag("moe_route", route_path, "bf16");
      route.tag.marks = 0;  // one call with the selection (one profile mark after the sort)
      add(route, Scope::per_layer, layers);
      Op select;
      select.name = "moe_select";
      select.kind = OpKind::sampling;  // a top-k over each row, like sampling
      select.compute_dtype = DType::fp32;
      select.kernels = 1 + sort_kernels;
      select.rows = tokens_;
      select.cols = experts;
      select.activation_bytes = 4.0 * t * experts + 16.0 * n;
      select.tag = tag("moe_route", route_path, "bf16");
      add(select, Scope::per_layer, layers);
    } else {
      // A warp's dot products on the CUDA cores (+ a top-k kernel when split).
      route.compute_dtype = DType::fp32;
      route.kernels = (route_form == MoeRouteForm::split ? 2 : 1) + sort_kernels;
      route.activation_bytes = t * static_cast<double>(h) * fb_ + 16.0 * n;
      route.tag = tag("moe_route", route_path, "bf16");
      add(route, Scope::per_layer, layers);
    }
    // The slot kernels read a slot's expert once per slot; the grouped kernels and the GEMMs
    // each reached expert once.
    const double reads = form == MoeExpertForm::slots ? n : reached;
    const double gate_up_weights = reads * 2.0 * static_cast<double>(inter * h) * fb_;
    const double down_weights = reads * static_cast<double>(h * inter) * fb_;
    if (decode_kernels) {
      Op gate_up;
      gate_up.name = "experts_gate_up";
      gate_up.kind = OpKind::moe_gemm;
      gate_up.compute_dtype = DType::fp32;
      gate_up.gemm = {1, 2 * inter, h, slots};
      gate_up.flops = 4.0 * n * static_cast<double>(inter * h);
      gate_up.weight_bytes = gate_up_weights;
      gate_up.activation_bytes =
          t * static_cast<double>(h) * fb_ + n * static_cast<double>(inter) * fb_;
      // The slot and the grouped kernels stream their weights at different rates: each its
      // own path, so each its own calibration.
      const char* path = form == MoeExpertForm::slots ? "moe_gemv" : "moe_grouped";
      gate_up.tag = tag("gemm_gate_up", path, "bf16");
      add(gate_up, Scope::per_layer, layers);
      Op down = gate_up;
      down.name = "experts_down";
      down.gemm = {1, h, inter, gate_up.gemm.groups};
      down.flops = 2.0 * n * static_cast<double>(inter * h);
      down.weight_bytes = down_weights;
      down.activation_bytes = n * static_cast<double>(inter + h) * fb_;
      down.tag = tag("gemm_down", path, "bf16");
      add(down, Scope::per_layer, layers);
    } else {
      Op gather = make_embedding_op("moe_gather", slots, h, p_.float_dtype);
      gather.activation_bytes = 2.0 * n * static_cast<double>(h) * fb_ + 4.0 * n;
      gather.tag = tag("moe_route", route_path, "bf16");
      add(gather, Scope::per_layer, layers);
      // The one grouped GEMM: a launch each for gate/up (SiLU×mul in its epilogue) and down.
      const bool one_launch = form == MoeExpertForm::grouped_gemm;
      const int64_t rows = std::max<int64_t>(1, std::llround(n / reached));  // mean per expert
      const int launches = one_launch ? 1 : static_cast<int>(std::ceil(reached));
      Op gate_up;
      gate_up.name = "experts_gate_up";
      gate_up.kind = OpKind::gemm;
      gate_up.compute_dtype = p_.float_dtype;
      gate_up.kernels = launches;
      gate_up.gemm = {rows, 2 * inter, h, 1};
      gate_up.flops = 4.0 * n * static_cast<double>(inter * h);
      gate_up.weight_bytes = gate_up_weights;
      gate_up.activation_bytes = n * static_cast<double>(h + (one_launch ? 1 : 2) * inter) * fb_;
      // Their own path: a GEMM an expert, launched by the host after it waited for the counts
      // (the pass's GPU idles while it launches them), at each expert's rows.
      // Many experts (Qwen3-30B-A3B's 128 of 768) make many small GEMMs the host launches one
      // after another, few (Mixtral's 8 of 14336) a few large ones the tensor cores bound: each
      // regime its own key ("moe_gemm_many" from kEngineMoeManyExperts experts).
      // The one-launch GEMMs are their own path ("moe_gemm_grouped"): mma.sync tiles of 128
      // rows an expert, no host in the loop.
      const char* gemm_path = one_launch                         ? "moe_gemm_grouped"
                              : experts >= kEngineMoeManyExperts ? "moe_gemm_many"
                                                                 : "moe_gemm";
      gate_up.tag = tag("gemm_gate_up", gemm_path, "bf16");
      add(gate_up, Scope::per_layer, layers);
      if (!one_launch) add_silu_mul(slots);
      Op down = gate_up;
      down.name = "experts_down";
      down.gemm = {rows, h, inter, 1};
      down.flops = 2.0 * n * static_cast<double>(inter * h);
      down.weight_bytes = down_weights;
      down.activation_bytes = n * static_cast<double>(inter + h) * fb_;
      down.tag = tag("gemm_down", gemm_path, "bf16");
      add(down, Scope::per_layer, layers);
    }
    Op combine;
    combine.name = "moe_combine";
    combine.kind = OpKind::add;
    combine.compute_dtype = p_.float_dtype;
    combine.rows = tokens_;
    combine.cols = h;
    combine.flops = 3.0 * n * static_cast<double>(h);
    combine.activation_bytes = (n + t) * static_cast<double>(h) * fb_ + 8.0 * n;
    combine.tag = tag("moe_combine", "combine", "bf16");
    add(combine, Scope::per_layer, layers);
  }

  // One projection as the engine runs it: the ops of one call of its class, the last of them
  // closing the call (one profile mark).
  void add_projection(const Projection& pr, Scope scope, int64_t count) {
    const double rows = static_cast<double>(pr.rows), out = static_cast<double>(pr.out);
    const double in = static_cast<double>(pr.in);
    const double out_bytes = pr.fp32_out ? 4.0 : fb_;
    const double bias_bytes = pr.bias ? out * fb_ : 0.0;
    const double stored = engine_weight_bytes(pr.out, pr.in, p_.weights, p_.quant_group_size);
    Op gemm;
    gemm.name = pr.name;
    gemm.kind = OpKind::gemm;
    gemm.gemm = {pr.rows, pr.out, pr.in, 1};
    gemm.flops = 2.0 * rows * out * in + (pr.bias ? rows * out : 0.0);
    if (on_gemv(pr.rows)) {
      // The GEMV kernels read the stored weights and quantize their input rows themselves.
      // One or two rows take the streaming GEMV, whose dequantization and multiply-adds run on
      // the CUDA cores (the engine's calibration prices its paths against the fp32 rate:
      // engine_op_peak; measured arithmetic-bound for int8/int4/fp8 on the H200, and at two rows
      // for bf16 too); 3-32 rows (quantized formats) the tensor-core GEMV.
      // The streaming GEMV, where its staged input fits (wider rows: the tensor-core GEMV).
      const bool stream = streams(pr.rows, pr.in);
      const bool quantized = p_.weights != DType::bf16 && p_.weights != DType::fp16;
      gemm.compute_dtype = stream && quantized             ? DType::fp32
                           : p_.activations == DType::int8 ? DType::int8
                                                           : p_.float_dtype;
      gemm.weight_bytes = stored + bias_bytes;
      gemm.activation_bytes = rows * in * fb_ + rows * out * out_bytes;
      const double residual = rows * out * fb_;
      switch (pr.fused) {
        case Fused::none:
          break;
        case Fused::norm_prologue:  // reads the residual stream and the norm weight
          gemm.weight_bytes += in * fb_;
          gemm.flops += 4.0 * rows * in;
          break;
        case Fused::norm_rope:  // norm prologue; RoPE of the query and key pairs, the new keys
                                // and values to the cache, the positions and slots read
          gemm.weight_bytes += in * fb_;
          gemm.flops += 4.0 * rows * in + 6.0 * rows * static_cast<double>(q_dim_ + kv_dim_);
          gemm.activation_bytes += 8.0 * rows + 2.0 * rows * static_cast<double>(s_.kv_heads) *
                                                    engine_kv_vector_bytes(s_.head_dim, p_.kv);
          break;
        case Fused::residual_epilogue:  // adds into the residual: read and written
          gemm.activation_bytes += residual;
          break;
        case Fused::norm_swiglu:  // norm prologue; writes SiLU(gate) x up, half the rows' width
          gemm.weight_bytes += in * fb_;
          gemm.flops += 4.0 * rows * in + 6.0 * rows * out / 2.0;
          gemm.activation_bytes -= rows * out / 2.0 * out_bytes;
          break;
      }
      gemm.programmatic_launch = stream && engine_gemv_stream_programmatic(p_.weights);
      const bool plain = pr.fused == Fused::none;
      // The QKV GEMV with RoPE in its epilogue has a key of its own ("gemv_fused_rope", falling
      // back to "gemv_fused"): profiles from before the epilogue time the plain fused kernel.
      gemm.tag = tag(pr.kernel_class,
                     pr.fused == Fused::norm_rope ? "gemv_fused_rope"
                     : stream                     ? (plain ? "gemv" : "gemv_fused")
                                                  : (plain ? "gemv_mma" : "gemv_mma_fused"),
                     weight_label_);
      add(gemm, scope, count);
      return;
    }
    const KernelTag call = tag(pr.kernel_class, "gemm", weight_label_);
    const bool w8a8 = p_.weights == DType::int8 && p_.activations == DType::int8;
    const bool quantized_input = w8a8 || p_.weights == DType::fp8;
    if (quantized_input) {
      // Each input row quantized by its absolute maximum, its fp32 scale written beside it.
      Op quant;
      quant.name = "input_quantize";
      quant.kind = OpKind::quantize;
      quant.compute_dtype = p_.float_dtype;
      quant.rows = pr.rows;
      quant.cols = pr.in;
      quant.flops = 3.0 * rows * in;
      quant.activation_bytes = rows * in * (fb_ + 1.0) + rows * 4.0;
      quant.tag = call;
      quant.tag.marks = 0;
      add(quant, scope, count);
      gemm.compute_dtype = w8a8 ? DType::int8 : DType::fp8;
      gemm.weight_bytes = stored;
      const double accumulator_bytes = w8a8 ? 4.0 : out_bytes;
      gemm.activation_bytes = rows * in + rows * 4.0 + rows * out * accumulator_bytes;
      if (!w8a8) gemm.weight_bytes += bias_bytes;
      gemm.tag = call;
      if (!w8a8) {
        add(gemm, scope, count);
        return;
      }
      gemm.tag.marks = 0;
      add(gemm, scope, count);
      // The int32 products scaled by row and channel scales (and the bias) into bf16.
      Op dequant;
      dequant.name = "int32_dequantize";
      dequant.kind = OpKind::dequantize;
      dequant.compute_dtype = p_.float_dtype;
      dequant.flops = 3.0 * rows * out;
      dequant.weight_bytes = out * 4.0 + bias_bytes;
      dequant.activation_bytes = rows * out * 4.0 + rows * 4.0 + rows * out * out_bytes;
      dequant.tag = call;
      add(dequant, scope, count);
      return;
    }
    gemm.compute_dtype = p_.float_dtype;
    gemm.weight_bytes = out * in * fb_ + bias_bytes;
    gemm.activation_bytes = rows * in * fb_ + rows * out * out_bytes;
    gemm.tag = call;
    if (p_.weights == DType::int8 || p_.weights == DType::int4) {
      // Weight-only: a chunk of output rows dequantized into the bf16 scratch, then its GEMM,
      // which reads the chunk back and the whole input again.
      const int64_t chunk = engine_dequant_chunk_rows(pr.in);
      const int chunks = static_cast<int>((pr.out + chunk - 1) / chunk);
      Op dequant;
      dequant.name = "weight_dequantize";
      dequant.kind = OpKind::dequantize;
      dequant.compute_dtype = p_.float_dtype;
      dequant.kernels = chunks;
      dequant.flops = (p_.weights == DType::int4 ? 2.0 : 1.0) * out * in;
      dequant.weight_bytes = stored;
      dequant.activation_bytes = out * in * fb_;
      dequant.tag = call;
      dequant.tag.marks = 0;
      add(dequant, scope, count);
      gemm.kernels = chunks;
      gemm.activation_bytes += (chunks - 1) * rows * in * fb_;
    }
    add(gemm, scope, count);
  }

  const ModelConfig& model_;
  const StepShape& shape_;
  const Precision& p_;
  const KernelPlan& plan_;
  const ShardDims& s_;
  std::vector<Op>& ops_;
  const int64_t tokens_, q_dim_, kv_dim_;
  const double fb_;
  const char* weight_label_;
  const char* kv_label_;
};

}  // namespace

void build_engine_step_graph(const ModelConfig& model, const StepShape& shape,
                             const Precision& precision, const KernelPlan& plan,
                             const ShardDims& shard, std::vector<Op>& ops) {
  ops.clear();
  EngineBuilder(model, shape, precision, plan, shard, ops).build_step();
}

void build_engine_context_ops(const ModelConfig& model, const StepShape& shape,
                              const Precision& precision, const KernelPlan& plan,
                              const ShardDims& shard, std::vector<Op>& ops) {
  EngineBuilder(model, shape, precision, plan, shard, ops).build_context_ops();
}

}  // namespace inferlab
