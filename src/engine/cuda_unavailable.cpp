// The CUDA backend in a build without CUDA: no device, and a clear refusal.
#include "engine/collective_curves.hpp"
#include "engine/cuda_backend.hpp"
#include "util/error.hpp"

namespace inferlab::engine {

bool cuda_device_available() {
  return false;
}
std::string cuda_device_name() {
  return "";
}

int64_t cuda_backend_fixed_bytes(const LlamaConfig&, const CudaBackendOptions&) {
  return 0;
}
int64_t cuda_kv_block_bytes(const LlamaConfig&, const CudaBackendOptions&) {
  return 0;
}
int64_t cuda_gemm_plans(const Backend&) {
  return 0;
}
int64_t cuda_persistent_decode_passes(const Backend&) {
  return 0;
}

std::unique_ptr<Backend> make_cuda_backend(const LlamaConfig&, const TensorSource&,
                                           const CudaBackendOptions&, const Checkpoint*) {
  throw InputError("--device cuda: this build has no CUDA backend; use --device cpu");
}

std::unique_ptr<Backend> make_tp_cuda_backend(const LlamaConfig&, const TensorSource&,
                                              const CudaBackendOptions&, int64_t) {
  throw InputError("--device cuda: this build has no CUDA backend; use --device cpu");
}

std::unique_ptr<Backend> make_tp_cuda_process_rank(const LlamaConfig&, const TensorSource&,
                                                   const CudaBackendOptions&, tp::ProcessGroup&) {
  throw InputError("--device cuda: this build has no CUDA backend; use --device cpu");
}

nlohmann::json measure_engine_collectives(bool) {
  return nullptr;
}

}  // namespace inferlab::engine
