#include "model/op.hpp"

namespace inferlab {

std::string_view op_kind_name(OpKind kind) {
  switch (kind) {
    case OpKind::embedding:
      return "embedding";
    case OpKind::rmsnorm:
      return "rmsnorm";
    case OpKind::add_rmsnorm:
      return "add_rmsnorm";
    case OpKind::layernorm:
      return "layernorm";
    case OpKind::add_layernorm:
      return "add_layernorm";
    case OpKind::gelu:
      return "gelu";
    case OpKind::gemm:
      return "gemm";
    case OpKind::moe_gemm:
      return "moe_gemm";
    case OpKind::rope:
      return "rope";
    case OpKind::kv_write:
      return "kv_write";
    case OpKind::rope_kv_write:
      return "rope_kv_write";
    case OpKind::attention:
      return "attention";
    case OpKind::attention_scores:
      return "attention_scores";
    case OpKind::attention_softmax:
      return "attention_softmax";
    case OpKind::attention_context:
      return "attention_context";
    case OpKind::repeat_kv:
      return "repeat_kv";
    case OpKind::add:
      return "add";
    case OpKind::silu:
      return "silu";
    case OpKind::mul:
      return "mul";
    case OpKind::silu_mul:
      return "silu_mul";
    case OpKind::sampling:
      return "sampling";
    case OpKind::all_reduce:
      return "all_reduce";
    case OpKind::all_gather:
      return "all_gather";
  }
  return "?";
}

}  // namespace inferlab
