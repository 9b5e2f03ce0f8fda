// `inferlab loadgen`: serve's workload sent to a live OpenAI-compatible server, measured the way
// `inferlab serve` reports a simulated run, so the two compare field by field.
#include <fmt/format.h>

#include <iostream>

#include "cli/commands.hpp"
#include "cli/common_args.hpp"
#include "cli/serve_args.hpp"
#include "report/emit.hpp"
#include "report/serve_report.hpp"
#include "serve/metrics.hpp"
#include "server/loadgen.hpp"

namespace inferlab::cli {

namespace {
struct LoadgenArgs {
  ServeArgs workload;
  server::LoadgenOptions options;
  std::string format = "table", requests_csv;
};
}  // namespace

void register_loadgen(CLI::App& app) {
  auto args = std::make_shared<LoadgenArgs>();
  CLI::App* cmd = app.add_subcommand(
      "loadgen",
      "Send serve's workload to an OpenAI-compatible server (streamed, open loop) and measure "
      "TTFT, TPOT, ITL, E2E and throughput in serve's summary");
  cmd->add_option("--url", args->options.url, "The server, http://HOST:PORT or https://HOST:PORT")
      ->required();
  cmd->add_option("--api-key", args->options.api_key, "Sent as 'Authorization: Bearer KEY'")
      ->envname("INFERLAB_API_KEY");
  cmd->add_option(
      "--ca-cert", args->options.ca_cert,
      "https: trust this PEM certificate (a self-signed server's) instead of the system's");
  cmd->add_option("--model", args->options.model,
                  "The 'model' field (default: the server's first)");
  add_workload_options(cmd, args->workload, true);
  cmd->add_option("--vocab-size", args->options.vocab_size, "Prompt token ids are drawn below this")
      ->capture_default_str();
  cmd->add_option("--max-concurrency", args->options.max_concurrency,
                  "Requests in flight at most (0: open loop)")
      ->capture_default_str();
  cmd->add_option("--timeout-s", args->options.timeout_s, "Per request; past it a request fails")
      ->capture_default_str();
  cmd->add_option("--requests-csv", args->requests_csv, "Write one row per request here");
  cmd->add_option("--format", args->format, "table, json or csv")->capture_default_str();
  cmd->callback([args] {
    const auto& a = *args;
    const OutputFormat format = parse_output_format(a.format);
    server::LoadgenOptions options = a.options;
    options.seed = a.workload.seed;
    const std::vector<ServeRequest> requests = make_workload(a.workload, a.workload.rate);
    const server::LoadgenResult result = server::run_loadgen(requests, options);
    const ServeSummary s = summarize(result.run);
    if (!a.requests_csv.empty()) {
      open_output(a.requests_csv, "--requests-csv") << serve_requests_csv(result.run);
    }
    nlohmann::json json = serve_summary_json(s);
    json["executor"] = "loadgen";
    json["url"] = options.url;
    json["model"] = result.model;
    json["failed"] = result.failed;
    json["failures"] = result.failures;
    std::string text = fmt::format(
        "{} at {}: {} requests, {} failed, {:.1f} s\n{}throughput {:.2f} req/s, {:.0f} output "
        "tok/s\n",
        result.model, options.url, s.requests, result.failed, s.duration_s,
        serve_latency_table(s).to_text(), s.requests_per_s, s.output_tokens_per_s);
    for (const auto& f : result.failures) text += "failed: " + f + "\n";
    emit(json, text, serve_latency_table(s).to_csv(), format);
  });
}

}  // namespace inferlab::cli
