#include "model/op.hpp"

#include "util/enum_names.hpp"

namespace inferlab {

namespace {
constexpr EnumNameTable<OpKind, 25> kOpKindNames = {{
    {OpKind::embedding, "embedding"},
    {OpKind::rmsnorm, "rmsnorm"},
    {OpKind::add_rmsnorm, "add_rmsnorm"},
    {OpKind::layernorm, "layernorm"},
    {OpKind::add_layernorm, "add_layernorm"},
    {OpKind::gelu, "gelu"},
    {OpKind::gemm, "gemm"},
    {OpKind::moe_gemm, "moe_gemm"},
    {OpKind::rope, "rope"},
    {OpKind::kv_write, "kv_write"},
    {OpKind::rope_kv_write, "rope_kv_write"},
    {OpKind::attention, "attention"},
    {OpKind::attention_scores, "attention_scores"},
    {OpKind::attention_softmax, "attention_softmax"},
    {OpKind::attention_context, "attention_context"},
    {OpKind::repeat_kv, "repeat_kv"},
    {OpKind::add, "add"},
    {OpKind::silu, "silu"},
    {OpKind::mul, "mul"},
    {OpKind::silu_mul, "silu_mul"},
    {OpKind::sampling, "sampling"},
    {OpKind::all_reduce, "all_reduce"},
    {OpKind::all_gather, "all_gather"},
    {OpKind::dequantize, "dequantize"},
    {OpKind::quantize, "quantize"},
}};
}  // namespace

std::string_view op_kind_name(OpKind kind) {
  return enum_name(kOpKindNames, kind);
}

}  // namespace inferlab
