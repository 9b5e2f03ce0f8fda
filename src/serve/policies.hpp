#pragma once
#include <vector>

#include "serve/sequence.hpp"

namespace inferlab {

class Scheduler;
// One file each (serve/policy_<name>.cpp); SchedulePolicy (serve/serving_loop.hpp) says what each
// does.
std::vector<Work> schedule_vllm(Scheduler& scheduler);
std::vector<Work> schedule_chunked(Scheduler& scheduler);
std::vector<Work> schedule_orca(Scheduler& scheduler);
std::vector<Work> schedule_static(Scheduler& scheduler);

}  // namespace inferlab
