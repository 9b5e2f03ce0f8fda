#include "serve/replay_executor.hpp"

#include <fmt/format.h>

#include <fstream>
#include <map>
#include <sstream>

#include "util/error.hpp"
#include "util/text.hpp"

namespace inferlab {

namespace {
std::vector<std::string> csv_fields(const std::string& line) {
  std::vector<std::string> fields;
  std::stringstream in(line);
  for (std::string field; std::getline(in, field, ',');) fields.push_back(field);
  return fields;
}

double number_at(const std::vector<std::string>& fields, size_t column, const std::string& where) {
  const auto value = column < fields.size() ? parse_number(fields[column]) : std::nullopt;
  if (!value || !(*value >= 0.0)) {
    throw InputError(where + ": expected a non-negative number in column " +
                     std::to_string(column + 1));
  }
  return *value;
}
}  // namespace

std::vector<MeasuredIteration> load_measured_iterations(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError("cannot read the iterations CSV '" + path + "'");
  std::string line;
  if (!std::getline(in, line)) throw InputError("'" + path + "' is empty");
  std::map<std::string, size_t> column;
  const auto header = csv_fields(line);
  for (size_t i = 0; i < header.size(); ++i) column[header[i]] = i;
  for (const char* name : {"duration_ms", "device_ms", "prefill_tokens", "decode_seqs"}) {
    if (!column.count(name)) {
      throw InputError("'" + path + "' has no column '" + name +
                       "' (write it with serve --iterations-csv)");
    }
  }
  std::vector<MeasuredIteration> rows;
  for (int line_no = 2; std::getline(in, line); ++line_no) {
    if (line.empty()) continue;
    const auto fields = csv_fields(line);
    const std::string where = fmt::format("{} line {}", path, line_no);
    MeasuredIteration it;
    it.duration_s = number_at(fields, column["duration_ms"], where) * 1e-3;
    it.device_s = number_at(fields, column["device_ms"], where) * 1e-3;
    it.prefill_tokens = static_cast<int64_t>(number_at(fields, column["prefill_tokens"], where));
    it.decode_seqs = static_cast<int64_t>(number_at(fields, column["decode_seqs"], where));
    rows.push_back(it);
  }
  if (rows.empty()) throw InputError("'" + path + "' has no iterations");
  return rows;
}

ReplayExecutor::ReplayExecutor(std::vector<MeasuredIteration> measured,
                               const SchedulerConfig& config)
    : measured_(std::move(measured)) {
  if (config.speculative.k > 0) {
    throw InputError(
        "a replay follows runs without speculation (the accepted drafts were not recorded)");
  }
}

IterationOutcome ReplayExecutor::execute(const ScheduledIteration& iteration) {
  int64_t prefill_tokens = 0, decode_seqs = 0;
  IterationOutcome outcome;
  for (const Work& w : iteration.work) {
    outcome.advance.push_back(w.new_tokens);
    if (w.decode) {
      ++decode_seqs;
    } else {
      prefill_tokens += w.new_tokens;
    }
  }
  if (next_ >= measured_.size()) {
    throw InputError(fmt::format(
        "the replay formed more iterations than the {} measured ones: the flags or the workload "
        "differ from the measured run's",
        measured_.size()));
  }
  const MeasuredIteration& m = measured_[next_];
  if (m.prefill_tokens != prefill_tokens || m.decode_seqs != decode_seqs) {
    throw InputError(fmt::format(
        "iteration {} of the replay has {} prefill tokens and {} decoding sequences where the "
        "measured run had {} and {}: the flags or the workload differ from the measured run's",
        next_ + 1, prefill_tokens, decode_seqs, m.prefill_tokens, m.decode_seqs));
  }
  ++next_;
  outcome.duration_s = m.duration_s;
  outcome.device_s = m.device_s;
  return outcome;
}

}  // namespace inferlab
