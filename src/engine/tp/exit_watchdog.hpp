#pragma once
// The last resort of a tensor-parallel rank whose peer died while the GPUs wait on it in a
// collective: NCCL's abort is asked to end the waiting kernels, but a CUDA graph that holds more
// collectives of the aborted communicator, or an abort that itself waits on the device, can leave
// the rank blocked for good. A hang is the one outcome a rank must never have (a supervisor can
// restart a process that exits, not one that waits), so a watchdog ends the process if the
// engine has not ended it by itself in time.
#include <chrono>
#include <string>

namespace inferlab::engine::tp {

// Unless this process has exited by then, after `grace` writes "inferlab: error: `message`" to
// stderr and ends the process with exit code 1 (std::_Exit: no destructors, which could block on
// the same device). Returns at once; the watch runs on a detached thread.
void exit_unless_ended_within(std::chrono::milliseconds grace, std::string message);

}  // namespace inferlab::engine::tp
