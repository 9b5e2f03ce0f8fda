// `inferlab tp-worker`: a rank other than 0 of a tensor-parallel group of processes
// (engine/tp/process_open.hpp). It needs only where rank 0 is: the model and every engine option
// come from rank 0's command. Prints nothing on stdout.
#include <fmt/format.h>

#include <charconv>
#include <cstdlib>

#include "cli/commands.hpp"
#include "cli/engine_args.hpp"
#include "engine/tp/process_open.hpp"
#include "util/error.hpp"

namespace inferlab::cli {

namespace {

constexpr int64_t kNotGiven = INT64_MIN;

struct TpWorkerArgs {
  int64_t rank = kNotGiven, world = kNotGiven;
  std::string master, model;
  double timeout_s = 60;
  bool launched = false;
};

// A flag's value, else the environment variable's (torchrun's names), else kNotGiven.
int64_t flag_or_environment(int64_t flag, const char* variable) {
  if (flag != kNotGiven) return flag;
  const char* value = std::getenv(variable);
  if (value == nullptr || *value == '\0') return kNotGiven;
  const std::string text = value;
  int64_t number = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), number);
  if (error != std::errc() || end != text.data() + text.size()) {
    throw InputError(fmt::format("{}='{}' in the environment is not a number", variable, text));
  }
  return number;
}

void run_tp_worker_command(const TpWorkerArgs& a) {
  engine::tp::WorkerOptions w;
  const int64_t world = flag_or_environment(a.world, "WORLD_SIZE");
  const int64_t rank = flag_or_environment(a.rank, "RANK");
  const std::string master = a.master.empty() ? tp_master_from_environment() : a.master;
  if (world == kNotGiven || rank == kNotGiven || master.empty()) {
    throw InputError(
        "tp-worker needs --tp-rank, --tp-world and --tp-master host:port (or RANK, WORLD_SIZE, "
        "MASTER_ADDR and MASTER_PORT in the environment)");
  }
  if (world < 2 || world > 64) {
    throw InputError(fmt::format("--tp-world {}: a group of processes has 2 to 64 ranks", world));
  }
  if (rank < 1 || rank >= world) {
    throw InputError(fmt::format(
        "--tp-rank {}: a worker of --tp-world {} is rank 1 to {} (rank 0 is the command that "
        "drives the group, e.g. `inferlab server ... --tp-world {}`)",
        rank, world, world - 1, world));
  }
  if (!(a.timeout_s > 0 && a.timeout_s <= 86400)) {
    throw InputError("--tp-timeout must be in (0, 86400] seconds");
  }
  w.rank = static_cast<int>(rank);
  w.world = static_cast<int>(world);
  w.master = engine::tp::parse_endpoint(master, "--tp-master");
  w.timeout_s = a.timeout_s;
  w.model = a.model;
  w.launched = a.launched;
  bool reported = false;
  try {
    engine::tp::run_tp_worker(w, &reported);
  } catch (const InputError&) {
    // Started by rank 0, which reports what this rank told it: one message, not one per rank.
    if (a.launched && reported) throw QuietExit(2);
    throw;
  } catch (const std::exception&) {
    if (a.launched && reported) throw QuietExit(1);
    throw;
  }
}

}  // namespace

void register_tp_worker(CLI::App& app) {
  auto args = std::make_shared<TpWorkerArgs>();
  CLI::App* cmd = app.add_subcommand(
      "tp-worker",
      "A rank (1..N-1) of a tensor-parallel group of processes: joins rank 0 (an engine command "
      "run with --tp-world N), takes the model and options from it, runs its shard");
  cmd->add_option("--tp-rank", args->rank, "This rank, 1..N-1 (default: RANK)");
  cmd->add_option("--tp-world", args->world, "Ranks in the group (default: WORLD_SIZE)");
  cmd->add_option("--tp-master", args->master,
                  "host:port where rank 0 listens (default: MASTER_ADDR:MASTER_PORT)");
  cmd->add_option("--tp-timeout", args->timeout_s, "Seconds to wait for rank 0 to answer")
      ->capture_default_str();
  cmd->add_option("--model", args->model,
                  "This host's copy of rank 0's model (a checkpoint folder whose config.json is "
                  "rank 0's); default: rank 0's reference, read at the same path");
  cmd->add_flag("--tp-launched", args->launched,
                "Started by rank 0 (--tp-launch processes): failures go to rank 0 alone")
      ->group("");
  cmd->callback([args] { run_tp_worker_command(*args); });
}

}  // namespace inferlab::cli
