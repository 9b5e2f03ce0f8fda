// INTERIM (removed when the projection layer lands): bf16 projections through LtGemm only.
#include <stdexcept>

#include "engine/cuda/gemm.hpp"
#include "engine/cuda/projection.hpp"

namespace inferlab::engine::cuda {

struct Projector::Impl {
  LtGemm gemm;
};

Projector::Projector(int64_t, int64_t, int64_t) : impl_(std::make_unique<Impl>()) {}
Projector::~Projector() = default;

int64_t Projector::workspace_bytes(int64_t, int64_t, int64_t, DType, DType) {
  return int64_t{32} << 20;
}
void Projector::set_gemv(bool on) { impl_->gemm.set_gemv(on); }
bool Projector::gemv() const { return impl_->gemm.gemv(); }
bool Projector::takes_gemv(int64_t, const DeviceMatrix&) const { return false; }

void Projector::linear(const __nv_bfloat16* x, int64_t rows, const DeviceMatrix& w,
                       const __nv_bfloat16* bias, void* y, bool y_fp32, cudaStream_t stream) {
  if (w.format != DType::bf16) throw std::invalid_argument("interim projector: bf16 only");
  impl_->gemm.linear(x, rows, static_cast<const __nv_bfloat16*>(w.data), bias, w.in, w.out, y,
                     y_fp32, stream);
}

void Projector::gemv_fused(const GemvFused&, int64_t, const DeviceMatrix&, cudaStream_t) {
  throw std::invalid_argument("interim projector: no fused GEMV");
}

}  // namespace inferlab::engine::cuda
