#pragma once
#include <CLI/CLI.hpp>
#include <stdexcept>
#include <string>

namespace inferlab::cli {

// Each registers one subcommand whose callback does the work (and throws InputError on bad
// input, which main turns into exit code 2).

// A run that finished and wrote its output but failed a check the user asked for (validate's
// --max-mape): "inferlab: <what>" on stderr and exit code 1 (cli/run_command.hpp).
class CheckFailed : public std::runtime_error {
 public:
  explicit CheckFailed(const std::string& what) : std::runtime_error(what) {}
};

// A command whose failure has been told elsewhere (a tensor-parallel rank started by rank 0,
// which reports it): run_command returns `code` and prints nothing.
class QuietExit : public std::exception {
 public:
  explicit QuietExit(int code) : code_(code) {}
  int code() const { return code_; }
  const char* what() const noexcept override { return "exit without a message"; }

 private:
  int code_;
};

void register_predict(CLI::App& app);
void register_step(CLI::App& app);
void register_op(CLI::App& app);
void register_sweep(CLI::App& app);
void register_catalog(CLI::App& app);  // `models` and `hardware`
void register_fit(CLI::App& app);
void register_probe(CLI::App& app);
void register_roofline(CLI::App& app);
void register_validate(CLI::App& app);
void register_simulate(CLI::App& app);
void register_area(CLI::App& app);
void register_templates(CLI::App& app);
void register_explore(CLI::App& app);
void register_serve(CLI::App& app);
void register_capacity(CLI::App& app);
void register_report(CLI::App& app);  // HTML page of predict, serve or validate

// The engine: checkpoints, tokenizer, generation.
void register_init_weights(CLI::App& app);
void register_quantize(CLI::App& app);
void register_tokenize(CLI::App& app);
void register_generate(CLI::App& app);
void register_bench(CLI::App& app);       // the engine timed
void register_logits(CLI::App& app);      // teacher-forced logits to .npy
void register_perplexity(CLI::App& app);  // sliding-window perplexity of a text
void register_tp_worker(CLI::App& app);   // a rank of a tensor-parallel group of processes
void register_server(CLI::App& app);      // the OpenAI-compatible HTTP server
void register_loadgen(CLI::App& app);     // a load generator for any such server

}  // namespace inferlab::cli
