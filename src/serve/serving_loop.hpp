#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "serve/iteration_cost.hpp"
#include "serve/request.hpp"

namespace inferlab {

// How the engine forms each iteration's batch.
//  vllm:    vLLM's default (v0): an iteration runs waiting prompts whole (prefill only) when any
//           can be admitted, otherwise one decode token for every running sequence.
//  chunked: chunked prefill (Sarathi-Serve, vLLM v1): every running decode first, then prompt
//           chunks fill the rest of the token budget; prefill and decode share iterations.
//  orca:    iteration-level scheduling with whole prompts joining running decodes, and each
//           request's KV reserved up front for prompt + output (no paging, no preemption).
//  static:  the baseline: a batch is formed when the engine is idle, runs its prefill, then
//           decodes until its last member finishes; arrivals wait for the next batch.
enum class SchedulePolicy { vllm, chunked, orca, static_batch };
SchedulePolicy parse_schedule_policy(const std::string& name);  // InputError lists the known
std::string schedule_policy_name(SchedulePolicy policy);

// What happens to a sequence evicted when KV blocks run out: its KV is dropped and recomputed
// as a prefill later, or copied to host memory and back.
enum class PreemptionMode { recompute, swap };

struct SpeculativeConfig {
  int k = 0;                // draft tokens per step; 0: off
  double acceptance = 0.0;  // probability each draft token is accepted
  // Mean draft tokens proposed a step, in (0, k]; 0: k every step. Prompt lookup proposes
  // fewer where the context holds no match (the simulated executor's draws, not the scheduler's
  // reservation, which stays k + 1).
  double proposed_mean = 0.0;
};

struct SchedulerConfig {
  SchedulePolicy policy = SchedulePolicy::vllm;
  int64_t max_num_seqs = 256;
  int64_t max_num_batched_tokens = 8192;
  int64_t block_size = 16;
  int64_t kv_blocks = 0;      // KV cache size in blocks (from memory, see kv_cache_blocks)
  double kv_block_bytes = 0;  // bytes of one block on one device (swap traffic)
  bool prefix_caching = false;
  PreemptionMode preemption = PreemptionMode::recompute;
  SpeculativeConfig speculative;
  uint64_t seed = 1;  // draws of accepted draft tokens
  // Longest prompt + output a request may ask for (vLLM's max_model_len): a request past it is
  // rejected up front, never run. 0: no limit (the caller sets the model's context).
  int64_t max_model_len = 0;
};

// True when `request` asks for more positions than `config.max_model_len` allows.
bool exceeds_max_model_len(const ServeRequest& request, const SchedulerConfig& config);

// The most tokens one iteration can carry under `config`, which an executor sizes its buffers
// for: the token budget; every sequence's decode step (k + 1 tokens each under speculation); and,
// where whole prompts run in one iteration (every policy but chunked), the longest prompt a
// request may bring: `longest_request_tokens` (prompt + output, the recompute after a
// preemption included), or max_model_len where that is less.
int64_t max_iteration_tokens(const SchedulerConfig& config, int64_t longest_request_tokens);

// One engine iteration, for timelines.
struct IterationRecord {
  double start_s = 0.0, duration_s = 0.0;
  double device_s = 0.0;       // IterationOutcome::device_s
  double priced_s = -1.0;      // IterationOutcome::priced_s
  int64_t prefill_tokens = 0;  // prompt tokens computed
  int64_t decode_seqs = 0;     // sequences decoding
  int64_t batch_seqs = 0;      // sequences in the batch, prefilling or decoding
  int64_t running = 0, waiting = 0;
  int64_t kv_blocks_used = 0;
  int64_t preemptions = 0;  // sequences preempted while scheduling it
  // Where its attention reads: the longest context a prefill chunk attends to (its cached
  // prefix and itself; 0: no prefill) and the decoding sequences' mean and longest context.
  int64_t prefill_max_context = 0;
  int64_t decode_mean_context = 0;
  int64_t decode_max_context = 0;
};

struct ServeResult {
  std::vector<RequestOutcome> requests;  // in the order given
  std::vector<IterationRecord> iterations;
  int64_t kv_blocks = 0;
  int64_t preemptions = 0;
  int64_t prefix_hit_tokens = 0, prompt_tokens = 0;
  int64_t draft_tokens_proposed = 0, draft_tokens_accepted = 0;
  double makespan_s = 0.0;  // first arrival to last finish
};

class Executor;
// The serving loop: schedule → execute → update, until every request has finished, on a clock
// that each iteration advances by the time the executor reports (serve/executor.hpp). Requests
// (any order; arrival times decide) past max_model_len, or whose prompt and output cannot fit
// in the whole KV cache, are rejected, not run.
ServeResult run_serving(const std::vector<ServeRequest>& requests, const SchedulerConfig& config,
                        Executor& executor);

// run_serving with the simulator's executor: iterations priced by `cost`.
ServeResult simulate_serving(const std::vector<ServeRequest>& requests,
                             const SchedulerConfig& config, const IterationCost& cost);

}  // namespace inferlab
