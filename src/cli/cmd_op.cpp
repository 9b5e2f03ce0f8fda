#include <functional>

#include "cli/commands.hpp"
#include "cli/common_args.hpp"
#include "model/op_builders.hpp"
#include "report/emit.hpp"
#include "report/op_report.hpp"
#include "util/error.hpp"

namespace inferlab::cli {

namespace {

struct OpArgs {
  CommonArgs common;
  std::string dtype = "bf16", phase = "prefill";
  int64_t m = 0, n = 0, k = 0;
  int64_t batch = 1, heads = 0, kv_heads = 0, head_dim = 128, seq = 0, context = 0;
  bool causal = false;
  int64_t tokens = 0, hidden = 0, intermediate = 0, rows = 0, cols = 0;
};

constexpr int64_t kMaxDim = int64_t{1} << 31;

void require_dim(const char* flag, int64_t value) {
  if (value < 1 || value > kMaxDim) {
    throw InputError(std::string(flag) + " must be in [1, 2^31], got " + std::to_string(value));
  }
}

void print_op(const OpArgs& a, const char* what, const Op& op) {
  OutputFormat format = parse_output_format(a.common.format);
  LoadedHardware hw = load_cost_model(a.common);
  const OpReport report{what,
                        hw.spec.name,
                        hw.spec.ceiling_source(),
                        op,
                        hw.cost->price(op),
                        hw.cost->isolated_time_s(op),
                        hw.cost->describe(op)};
  emit(op_report_json(report), op_report_text(report), op_report_csv(report), format);
}

CLI::App* op_subcommand(CLI::App* parent, const char* name, const char* description, OpArgs& args) {
  CLI::App* cmd = parent->add_subcommand(name, description);
  add_hardware_options(cmd, args.common);
  add_format_option(cmd, args.common);
  return cmd;
}

// The attention shape the flags describe.
AttentionShape attention_shape(const OpArgs& a) {
  AttentionShape s;
  s.batch = a.batch;
  s.q_heads = a.heads;
  s.kv_heads = a.kv_heads > 0 ? a.kv_heads : a.heads;
  s.head_dim = a.head_dim;
  require_dim("--batch", s.batch);
  require_dim("--heads", s.q_heads);
  require_dim("--kv-heads", s.kv_heads);
  require_dim("--head-dim", s.head_dim);
  if (s.q_heads % s.kv_heads != 0) {
    throw InputError("--heads must be a multiple of --kv-heads");
  }
  if (a.phase == "prefill") {
    require_dim("--seq", a.seq);
    s.q_len = s.kv_len = a.seq;
    s.causal = a.causal;
  } else if (a.phase == "decode") {
    require_dim("--context", a.context);
    s.q_len = 1;
    s.kv_len = a.context;
  } else {
    throw InputError("--phase takes prefill or decode, got '" + a.phase + "'");
  }
  return s;
}

void register_gemm(CLI::App* op, const std::shared_ptr<OpArgs>& a) {
  CLI::App* gemm = op_subcommand(op, "gemm", "y[m,n] = x[m,k] W[n,k]^T", *a);
  gemm->add_option("--m", a->m, "Rows (tokens)")->required();
  gemm->add_option("--n", a->n, "Output features")->required();
  gemm->add_option("--k", a->k, "Input features")->required();
  gemm->add_option("--dtype", a->dtype, "bf16 fp16 fp8 int8 tf32 fp32")->capture_default_str();
  gemm->callback([a] {
    require_dim("--m", a->m);
    require_dim("--n", a->n);
    require_dim("--k", a->k);
    DType dtype = parse_dtype(a->dtype);
    DType out = is_8bit_or_less(dtype) ? DType::bf16 : dtype;
    print_op(*a, "gemm", make_gemm_op("gemm", a->m, a->n, a->k, dtype, dtype, out, dtype));
  });
}

void register_attention(CLI::App* op, const std::shared_ptr<OpArgs>& a) {
  CLI::App* attention = op_subcommand(op, "attention", "Fused attention, prefill or decode", *a);
  attention->add_option("--phase", a->phase, "prefill or decode")->capture_default_str();
  attention->add_option("--batch", a->batch, "Sequences")->capture_default_str();
  attention->add_option("--heads", a->heads, "Query heads")->required();
  attention->add_option("--kv-heads", a->kv_heads, "KV heads (default: --heads)");
  attention->add_option("--head-dim", a->head_dim, "Head dimension")->capture_default_str();
  attention->add_option("--seq", a->seq, "Prefill: tokens per sequence");
  attention->add_option("--context", a->context, "Decode: tokens attended per sequence");
  attention->add_flag("--causal", a->causal, "Prefill: causal mask");
  attention->callback([a] {
    print_op(*a, "attention",
             make_attention_op("attention", attention_shape(*a), DType::bf16, DType::bf16));
  });
}

void register_row_ops(CLI::App* op, const std::shared_ptr<OpArgs>& a) {
  auto token_op = [&](const char* name, const char* description, const char* width_flag,
                      int64_t& width, std::function<Op(int64_t, int64_t)> make) {
    CLI::App* cmd = op_subcommand(op, name, description, *a);
    cmd->add_option("--tokens", a->tokens, "Rows")->required();
    cmd->add_option(width_flag, width, "Row width")->required();
    cmd->callback([a, name, width_flag, &width, make] {
      require_dim("--tokens", a->tokens);
      require_dim(width_flag, width);
      print_op(*a, name, make(a->tokens, width));
    });
  };
  token_op("rmsnorm", "RMSNorm over rows of --hidden", "--hidden", a->hidden,
           [](int64_t t, int64_t h) { return make_rmsnorm_op("rmsnorm", t, h, DType::bf16); });
  token_op("add", "Residual add", "--hidden", a->hidden,
           [](int64_t t, int64_t h) { return make_add_op("add", t, h, DType::bf16); });
  token_op("silu_mul", "SiLU(gate) x up, fused", "--intermediate", a->intermediate,
           [](int64_t t, int64_t i) { return make_silu_mul_op("silu_mul", t, i, DType::bf16); });

  CLI::App* softmax = op_subcommand(op, "softmax", "Row softmax", *a);
  softmax->add_option("--rows", a->rows, "Rows")->required();
  softmax->add_option("--cols", a->cols, "Columns")->required();
  softmax->callback([a] {
    require_dim("--rows", a->rows);
    require_dim("--cols", a->cols);
    print_op(*a, "softmax", make_softmax_op("softmax", a->rows, a->cols, DType::bf16));
  });
}

}  // namespace

void register_op(CLI::App& app) {
  auto a = std::make_shared<OpArgs>();
  CLI::App* op = app.add_subcommand("op", "Time of one operator on one GPU");
  op->require_subcommand(1);
  register_gemm(op, a);
  register_attention(op, a);
  register_row_ops(op, a);
}

}  // namespace inferlab::cli
