#include "cli/run_command.hpp"

#include <algorithm>
#include <cstddef>
#include <iostream>
#include <mutex>
#include <sstream>
#include <utility>

#include "cli/commands.hpp"
#include "cli/field_grammar.hpp"
#include "util/error.hpp"
#include "util/field_error.hpp"

namespace inferlab::cli {

void register_commands(CLI::App& app) {
  // `inferlab --help` lists the commands by job, in this order (README.md has one section per
  // job). Each entry: the group's title and the functions that register its commands.
  using Register = void (*)(CLI::App&);
  const std::vector<std::pair<const char*, std::vector<Register>>> jobs = {
      {"Measure a GPU", {register_probe, register_roofline}},
      {"Predict", {register_predict, register_step, register_op, register_sweep}},
      {"Simulate hardware",
       {register_simulate, register_templates, register_area, register_explore}},
      {"Serve (simulated)", {register_serve, register_capacity}},
      {"Run a model",
       {register_generate, register_bench, register_init_weights, register_quantize,
        register_tokenize, register_logits, register_perplexity, register_tp_worker}},
      {"Serve a model", {register_server, register_loadgen}},
      {"Compare and fit", {register_validate, register_fit}},
      {"Report", {register_report}},  // HTML page of predict, serve or validate
      {"Data", {register_catalog}},   // `models` and `hardware`
  };
  for (const auto& [group, registers] : jobs) {
    const std::size_t before = app.get_subcommands({}).size();
    for (Register add : registers) add(app);
    const std::vector<CLI::App*> commands = app.get_subcommands({});
    for (std::size_t i = before; i < commands.size(); ++i) commands[i]->group(group);
  }
}

int run_command(const std::vector<std::string>& args, const std::string& program) {
  CLI::App app{"inferlab: how long an LLM takes on given hardware, and why"};
  app.require_subcommand(1);
  register_commands(app);
  if (!args.empty() && !args.front().starts_with('-')) {
    std::vector<std::string> known;
    for (const CLI::App* sub : app.get_subcommands({})) known.push_back(sub->get_name());
    if (std::find(known.begin(), known.end(), args.front()) == known.end()) {
      std::cerr << "inferlab: error: unknown command '" << args.front()
                << "'; known: " << join_names(known) << '\n';
      return 2;
    }
  }
  // CLI11 parses an argv (its vector overload wants the arguments reversed).
  std::vector<std::string> words{program};
  words.insert(words.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& word : words) argv.push_back(word.data());
  try {
    app.parse(static_cast<int>(argv.size()), argv.data());
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const QuietExit& e) {
    return e.code();
  } catch (const CLI::ParseError& e) {
    std::cerr << "inferlab: error: " << e.what() << " (see inferlab --help)\n";
    return 2;
  } catch (const FieldError& e) {
    // Library errors name fields; the user sees the flags.
    std::cerr << "inferlab: error: " << rename_fields(e.what(), flag_of_field) << '\n';
    return 2;
  } catch (const InputError& e) {
    std::cerr << "inferlab: error: " << e.what() << '\n';
    return 2;
  } catch (const CheckFailed& e) {
    std::cerr << "inferlab: " << e.what() << '\n';
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "inferlab: error: run failed: " << e.what() << '\n';
    return 1;
  }
  return 0;
}

namespace {
// Sends std::cout and std::cerr into strings while alive; the streams' own buffers come back
// when it goes, however the command ended.
class CapturedStreams {
 public:
  CapturedStreams() : cout_(std::cout.rdbuf(out_.rdbuf())), cerr_(std::cerr.rdbuf(err_.rdbuf())) {}
  ~CapturedStreams() {
    std::cout.rdbuf(cout_);
    std::cerr.rdbuf(cerr_);
    std::cout.clear();
    std::cerr.clear();
  }
  CapturedStreams(const CapturedStreams&) = delete;
  CapturedStreams& operator=(const CapturedStreams&) = delete;
  std::string out() const { return out_.str(); }
  std::string err() const { return err_.str(); }

 private:
  std::ostringstream out_, err_;
  std::streambuf* cout_;
  std::streambuf* cerr_;
};
}  // namespace

CommandOutput run_command_captured(const std::vector<std::string>& args) {
  static std::mutex streams;  // std::cout and std::cerr are the process's
  const std::lock_guard<std::mutex> lock(streams);
  CapturedStreams captured;
  CommandOutput result;
  result.exit_code = run_command(args);
  result.out = captured.out();
  result.err = captured.err();
  return result;
}

}  // namespace inferlab::cli
