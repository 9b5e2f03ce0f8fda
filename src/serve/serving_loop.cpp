#include "serve/serving_loop.hpp"

#include <algorithm>
#include <stdexcept>

#include "serve/scheduler.hpp"
#include "serve/simulated_executor.hpp"
#include "util/enum_names.hpp"
#include "util/error.hpp"

namespace inferlab {

namespace {
constexpr EnumNameTable<SchedulePolicy, 4> kSchedulePolicyNames = {{
    {SchedulePolicy::vllm, "vllm"},
    {SchedulePolicy::chunked, "chunked"},
    {SchedulePolicy::orca, "orca"},
    {SchedulePolicy::static_batch, "static"},
}};

void check_inputs(const std::vector<ServeRequest>& requests, const SchedulerConfig& config) {
  if (config.kv_blocks < 1 || config.block_size < 1 || config.max_num_seqs < 1 ||
      config.max_num_batched_tokens < 1 || config.max_model_len < 0) {
    throw InputError("serving engine needs at least one KV block, sequence and batched token");
  }
  for (const auto& r : requests) {
    if (r.prompt_tokens < 1 || r.output_tokens < 1 || !(r.arrival_s >= 0.0)) {
      throw InputError(
          "every request needs prompt_tokens >= 1, output_tokens >= 1 and "
          "arrival_s >= 0");
    }
  }
}
}  // namespace

SchedulePolicy parse_schedule_policy(const std::string& name) {
  return parse_enum(kSchedulePolicyNames, name, "scheduling policy");
}

std::string schedule_policy_name(SchedulePolicy policy) {
  return std::string(enum_name(kSchedulePolicyNames, policy));
}

bool exceeds_max_model_len(const ServeRequest& request, const SchedulerConfig& config) {
  return config.max_model_len > 0 &&
         request.prompt_tokens + request.output_tokens > config.max_model_len;
}

int64_t max_iteration_tokens(const SchedulerConfig& config, int64_t longest_request_tokens) {
  const int64_t decodes = config.max_num_seqs * (1 + config.speculative.k);
  int64_t tokens = std::max(config.max_num_batched_tokens, decodes);
  if (config.policy != SchedulePolicy::chunked) {
    const int64_t longest = config.max_model_len > 0
                                ? std::min(longest_request_tokens, config.max_model_len)
                                : longest_request_tokens;
    tokens = std::max(tokens, longest);
  }
  return tokens;
}

ServeResult run_serving(const std::vector<ServeRequest>& requests, const SchedulerConfig& config,
                        Executor& executor) {
  check_inputs(requests, config);
  Scheduler scheduler(requests, config);
  double now = scheduler.first_arrival_s();
  const double first_arrival = now;
  std::vector<IterationRecord> iterations;
  while (!scheduler.finished()) {
    scheduler.arrive(now);
    ScheduledIteration iteration = scheduler.schedule();
    if (iteration.idle()) {
      if (scheduler.has_pending_arrivals()) {
        now = std::max(now, scheduler.next_arrival_s());
        continue;
      }
      if (!scheduler.finished()) throw std::logic_error("serving engine stalled");
      break;
    }
    IterationRecord record;
    record.start_s = now;
    record.kv_blocks_used = scheduler.blocks().used_blocks();
    record.preemptions = scheduler.preemptions_this_iteration();
    record.batch_seqs = static_cast<int64_t>(iteration.work.size());
    int64_t decode_context_sum = 0, decodes = 0;
    for (const Work& w : iteration.work) {  // contexts as the iteration starts
      const int64_t context = w.seq->computed + w.new_tokens;
      if (w.decode) {
        decode_context_sum += context;
        ++decodes;
        record.decode_max_context = std::max(record.decode_max_context, context);
      } else {
        record.prefill_max_context = std::max(record.prefill_max_context, context);
      }
    }
    record.decode_mean_context = decodes > 0 ? decode_context_sum / decodes : 0;
    const IterationOutcome outcome = executor.execute(iteration);
    record.duration_s = outcome.duration_s;
    record.device_s = outcome.device_s;
    record.priced_s = outcome.priced_s;
    now += outcome.duration_s;
    const Scheduler::UpdateCounts counts = scheduler.update(iteration, outcome, now);
    record.prefill_tokens = counts.prefill_tokens;
    record.decode_seqs = counts.decode_seqs;
    record.running = scheduler.running_count();
    record.waiting = scheduler.waiting_count();
    iterations.push_back(record);
  }
  ServeResult result = scheduler.take_result();
  result.iterations = std::move(iterations);
  double last_finish = first_arrival;
  for (const auto& r : result.requests) last_finish = std::max(last_finish, r.finish_s);
  result.makespan_s = last_finish - first_arrival;
  return result;
}

ServeResult simulate_serving(const std::vector<ServeRequest>& requests,
                             const SchedulerConfig& config, const IterationCost& cost) {
  check_inputs(requests, config);
  SimulatedExecutor executor(cost, config);
  return run_serving(requests, config, executor);
}

}  // namespace inferlab
