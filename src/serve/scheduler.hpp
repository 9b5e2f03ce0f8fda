#pragma once
#include <cstdint>
#include <deque>
#include <span>
#include <vector>

#include "serve/block_manager.hpp"
#include "serve/executor.hpp"
#include "serve/sequence.hpp"
#include "serve/serving_loop.hpp"

namespace inferlab {

class Scheduler;
// A scheduling policy forms one iteration's work from the scheduler's queues, through the
// primitives below (one file per policy: serve/policy_*.cpp).
using SchedulePolicyFn = std::vector<Work> (*)(Scheduler& scheduler);
SchedulePolicyFn policy_function(SchedulePolicy policy);

// Sequence state, queues and the block manager of the serving loop: arrivals join `waiting`,
// admission moves them to `running` with KV blocks, preemption sends the newest running one
// back (recompute) or to host memory (swap), and update() applies what an iteration did.
// The loop (serve/serving_loop.cpp) is schedule → execute → update.
class Scheduler {
 public:
  Scheduler(const std::vector<ServeRequest>& requests, const SchedulerConfig& config);

  // --- Online use (the server): requests join while it runs ------------------------------
  // Adds a request that arrives now (its arrival_s is set to `now`); it waits at once. Returns
  // its id (0, 1, 2, ...). Only for a scheduler constructed without requests; its outcomes are
  // then read with outcome(), not take_result().
  int64_t add(ServeRequest request, double now);
  // Ends a sequence before its output is complete (a stop token, a client that went away): its
  // blocks go back at once. No effect on a finished one. Call between iterations.
  void end_early(int64_t id, double now);
  bool is_finished(int64_t id) const { return seq_ref(id).state == SeqState::finished; }
  const RequestOutcome& outcome(int64_t id) const { return outcome_ref(id); }
  // Lets go of a finished online request: its state is dropped once every request before it
  // is forgotten too, so a long-running server holds only what is in flight. Its id is then
  // no longer valid.
  void forget(int64_t id);
  int64_t held_requests() const { return static_cast<int64_t>(seqs_.size()); }
  // The whole run's counters so far (prefix hits, preemptions, drafts).
  const ServeResult& result_so_far() const { return result_; }

  // Moves every request that has arrived by `now` into the waiting queue.
  void arrive(double now);
  // The next iteration: its work and swap traffic (empty when nothing can run now).
  ScheduledIteration schedule();
  // Applies an iteration that ended at `now`: positions computed, tokens emitted, finished
  // sequences released. Returns its prompt tokens computed and its decoding sequences.
  struct UpdateCounts {
    int64_t prefill_tokens = 0, decode_seqs = 0;
  };
  UpdateCounts update(const ScheduledIteration& iteration, const IterationOutcome& outcome,
                      double now);

  bool finished() const { return done_ == static_cast<size_t>(first_id_) + seqs_.size(); }
  bool has_pending_arrivals() const { return next_arrival_ < arrivals_.size(); }
  double next_arrival_s() const { return arrivals_[next_arrival_]->request->arrival_s; }
  double first_arrival_s() const;
  int64_t preemptions_this_iteration() const { return iteration_preemptions_; }
  int64_t running_count() const { return static_cast<int64_t>(running_.size()); }
  int64_t waiting_count() const { return static_cast<int64_t>(waiting_.size() + swapped_.size()); }
  const BlockManager& blocks() const { return blocks_; }
  // The whole run: the counters and every request's outcome, in id order.
  ServeResult take_result();

  // --- The primitives the policies use ---------------------------------------------------
  const SchedulerConfig& config() const { return config_; }
  // vllm and chunked page the cache; orca and static reserve each request's KV up front.
  bool paged() const;
  // Tokens one decode step computes for `s`: 1, or k + 1 under speculation, never more than
  // it still has to emit.
  int64_t decode_tokens(const Seq* s) const;
  // Admits waiting sequences in arrival order (no overtaking) while sequence slots and the
  // token budget last: whole prompts, or with `chunks` a first chunk that fills what the budget
  // leaves, admitted only when the free blocks hold all of its prompt. A whole prompt may exceed
  // the budget when it is the iteration's first work (vLLM raises its budget to the longest
  // prompt).
  void admit_waiting(std::vector<Work>& work, int64_t& budget, bool chunks);
  // One decode step for every running sequence, oldest first, preempting the newest while
  // blocks run short.
  void schedule_decodes(std::vector<Work>& work);
  // Swapped-out sequences come back while blocks last.
  void swap_in();
  // Grows `s` to `tokens`, preempting later sequences while blocks are short. False when `s`
  // itself had to go.
  bool grow_or_preempt(Seq* s, int64_t tokens);
  // Gives every block of `s` back (static batching frees a finished batch at once).
  void release_blocks(Seq* s) { blocks_.release(s->id); }
  std::vector<Seq*>& running() { return running_; }
  bool swapped_empty() const { return swapped_.empty(); }

 private:
  void init_seq(Seq& seq, const ServeRequest& request, int64_t id);
  const Seq& seq_ref(int64_t id) const { return seqs_[static_cast<size_t>(id - first_id_)]; }
  Seq& seq_ref(int64_t id) { return seqs_[static_cast<size_t>(id - first_id_)]; }
  const RequestOutcome& outcome_ref(int64_t id) const {
    return outcomes_[static_cast<size_t>(id - first_id_)];
  }
  RequestOutcome& outcome_ref(int64_t id) { return outcomes_[static_cast<size_t>(id - first_id_)]; }
  bool reject_if_impossible(Seq* s);
  Seq* preempt();
  bool admit(Seq* s, int64_t chunk_limit, int64_t& new_tokens);
  void emit(Seq* s, int64_t tokens, double now);

  SchedulerConfig config_;
  SchedulePolicyFn policy_;
  BlockManager blocks_;
  std::deque<Seq> seqs_;                     // a deque: Seq* stay valid as requests join
  std::deque<ServeRequest> added_requests_;  // the online requests' own storage
  // The outcomes of the requests still held (every request, unless forgotten online), and the id
  // of the first of them.
  std::deque<RequestOutcome> outcomes_;
  int64_t first_id_ = 0;
  std::vector<Seq*> arrivals_;
  size_t next_arrival_ = 0;
  size_t done_ = 0;
  std::deque<Seq*> waiting_, swapped_;
  std::vector<Seq*> running_;
  ServeResult result_;
  int64_t iteration_preemptions_ = 0;
  std::vector<KvSwap> swaps_;  // this iteration's, in order
};

}  // namespace inferlab
