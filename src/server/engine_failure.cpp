#include "server/engine_failure.hpp"

#include <string_view>

#include "engine/tp/connection.hpp"

namespace inferlab::server {

bool is_fatal_engine_error(const std::exception& error) {
  // A tensor-parallel rank that went: the group cannot run another pass.
  if (dynamic_cast<const engine::tp::PeerLost*>(&error) != nullptr) return true;
  const std::string_view what = error.what();
  if (!what.starts_with("CUDA: ")) return false;
  // cudaGetErrorString's text of the sticky errors (the runtime API's cudaError docs; the texts
  // checked in CUDA 13's libcudart).
  static constexpr std::string_view kSticky[] = {
      "an illegal memory access was encountered",                // cudaErrorIllegalAddress
      "unspecified launch failure",                              // cudaErrorLaunchFailure
      "the launch timed out and was terminated",                 // cudaErrorLaunchTimeout
      "device-side assert triggered",                            // cudaErrorAssert
      "an illegal instruction was encountered",                  // cudaErrorIllegalInstruction
      "misaligned address",                                      // cudaErrorMisalignedAddress
      "operation not supported on global/shared address space",  // cudaErrorInvalidAddressSpace
      "invalid program counter",                                 // cudaErrorInvalidPc
      "hardware stack error",                                    // cudaErrorHardwareStackError
      "uncorrectable ECC error encountered",                     // cudaErrorECCUncorrectable
      "uncorrectable NVLink error",                              // cudaErrorNvlinkUncorrectable
      "context is destroyed",                                    // cudaErrorContextIsDestroyed
  };
  for (std::string_view sticky : kSticky) {
    if (what.find(sticky) != std::string_view::npos) return true;
  }
  return false;
}

}  // namespace inferlab::server
