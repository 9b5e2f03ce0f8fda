// Built when CMake found no CUDA compiler: `inferlab probe` explains why it cannot run.
#include "probe/probe.hpp"
#include "util/error.hpp"

namespace inferlab {

bool probe_available() {
  return false;
}
int visible_gpu_count() {
  return 0;
}

nlohmann::json run_host_probe(const ProbeOptions& options, std::ostream& progress) {
  return run_probe(options, progress);  // the same explanation
}

nlohmann::json run_probe(const ProbeOptions&, std::ostream&) {
  throw InputError(
      "this inferlab was built without CUDA, so it cannot probe a GPU; rebuild on a machine with "
      "the CUDA toolkit (cmake --preset release -DINFERLAB_CUDA=ON)");
}

}  // namespace inferlab
