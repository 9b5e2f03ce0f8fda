#include "serve/workload.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <istream>
#include <map>
#include <nlohmann/json.hpp>

#include "util/error.hpp"
#include "util/field_error.hpp"
#include "util/rng.hpp"
#include "util/text.hpp"

namespace inferlab {

namespace {
constexpr int64_t kMaxTokens = kMaxWorkloadTokens;
constexpr int64_t kMaxRequests = int64_t{1} << 24;

double number(const std::string& text, const std::string& what) {
  const auto v = parse_number(text);
  if (!v) throw InputError(what + ": '" + text + "' is not a number");
  return *v;
}

int64_t clamp_tokens(double v) {
  return std::clamp<int64_t>(static_cast<int64_t>(std::llround(v)), 1, kMaxTokens);
}
}  // namespace

int64_t LengthDistribution::sample(std::mt19937_64& rng) const {
  switch (kind) {
    case Kind::fixed:
      return clamp_tokens(a);
    case Kind::uniform: {
      std::uniform_int_distribution<int64_t> d(static_cast<int64_t>(a), static_cast<int64_t>(b));
      return clamp_tokens(static_cast<double>(d(rng)));
    }
    case Kind::normal:
      return clamp_tokens(std::normal_distribution<double>(a, b)(rng));
    case Kind::lognormal: {
      const double mu = std::log(a) - 0.5 * b * b;
      return clamp_tokens(std::lognormal_distribution<double>(mu, b)(rng));
    }
    case Kind::empirical: {
      std::uniform_int_distribution<size_t> d(0, values.size() - 1);
      return values[d(rng)];
    }
  }
  return 1;
}

double LengthDistribution::mean() const {
  switch (kind) {
    case Kind::fixed:
    case Kind::normal:
    case Kind::lognormal:
      return a;
    case Kind::uniform:
      return 0.5 * (a + b);
    case Kind::empirical: {
      double sum = 0.0;
      for (int64_t v : values) sum += static_cast<double>(v);
      return sum / static_cast<double>(values.size());
    }
  }
  return a;
}

std::vector<ServeRequest> generate_workload(const WorkloadSpec& spec) {
  if (spec.requests < 1 || spec.requests > kMaxRequests) {
    throw FieldError(fmt::format("`requests` must be in [1, {}]", kMaxRequests));
  }
  if (!(spec.rate_per_s >= 0.0) || spec.rate_per_s > 1e7) {
    throw FieldError("`rate_per_s` must be in [0, 1e7] requests/s (0: all at once)");
  }
  // Separate streams: changing the arrival process leaves the lengths alone.
  std::mt19937_64 arrivals_rng(spec.seed * 3 + 1), lengths_rng(spec.seed * 3 + 2),
      prefix_rng(spec.seed * 3 + 3);
  std::vector<ServeRequest> out(static_cast<size_t>(spec.requests));
  double clock = 0.0;  // in "on" time for bursty arrivals
  const auto& a = spec.arrival;
  for (auto& r : out) {
    if (spec.rate_per_s > 0.0) {
      double gap = 0.0;
      if (a.kind == ArrivalProcess::Kind::gamma) {
        const double shape = 1.0 / (a.cv * a.cv);
        gap = std::gamma_distribution<double>(shape, 1.0 / (shape * spec.rate_per_s))(arrivals_rng);
      } else {
        const double rate =
            a.kind == ArrivalProcess::Kind::bursty ? spec.rate_per_s / a.duty : spec.rate_per_s;
        gap = std::exponential_distribution<double>(rate)(arrivals_rng);
      }
      clock += gap;
      r.arrival_s = clock;
      if (a.kind == ArrivalProcess::Kind::bursty) {
        const double on_s = a.duty * a.period_s;
        r.arrival_s = std::floor(clock / on_s) * a.period_s + std::fmod(clock, on_s);
      }
    }
    r.prompt_tokens = spec.input.sample(lengths_rng);
    r.output_tokens = spec.output.sample(lengths_rng);
    if (spec.prefix.tokens > 0 &&
        std::uniform_real_distribution<double>(0.0, 1.0)(prefix_rng) < spec.prefix.share) {
      r.prefix_id = std::uniform_int_distribution<int64_t>(0, spec.prefix.groups - 1)(prefix_rng);
      r.prefix_tokens = spec.prefix.tokens;
      r.prompt_tokens = std::min(kMaxTokens, r.prompt_tokens + spec.prefix.tokens);
    }
  }
  return out;
}

namespace {
ServeRequest request_from_fields(const std::map<std::string, double>& f, const std::string& where) {
  auto get = [&](const char* key, bool required, double fallback) {
    auto it = f.find(key);
    if (it == f.end()) {
      if (required) throw InputError(where + ": missing '" + key + "'");
      return fallback;
    }
    return it->second;
  };
  ServeRequest r;
  r.arrival_s = get("arrival_s", true, 0.0);
  const double prompt = get("prompt_tokens", true, 0.0);
  const double output = get("output_tokens", true, 0.0);
  const double prefix_id = get("prefix_id", false, -1.0);
  const double prefix_tokens = get("prefix_tokens", false, 0.0);
  if (!(r.arrival_s >= 0.0) || !std::isfinite(r.arrival_s)) {
    throw InputError(where + ": arrival_s must be a time >= 0");
  }
  auto whole = [&](double v, double lo, double hi, const char* key) {
    if (!(v >= lo && v <= hi) || v != std::floor(v)) {
      throw InputError(
          fmt::format("{}: {} must be a whole number in [{:g}, {:g}]", where, key, lo, hi));
    }
    return static_cast<int64_t>(v);
  };
  r.prompt_tokens = whole(prompt, 1, kMaxTokens, "prompt_tokens");
  r.output_tokens = whole(output, 1, kMaxTokens, "output_tokens");
  r.prefix_id = whole(prefix_id, -1, 1e11, "prefix_id");
  r.prefix_tokens = whole(prefix_tokens, 0, static_cast<double>(r.prompt_tokens), "prefix_tokens");
  if (r.prefix_id < 0) r.prefix_tokens = 0;
  return r;
}
}  // namespace

std::vector<ServeRequest> load_trace(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError("trace '" + path + "' does not exist or cannot be read");
  const bool csv = path.size() >= 4 && path.substr(path.size() - 4) == ".csv";
  return parse_trace(in, csv ? TraceFormat::csv : TraceFormat::jsonl, path);
}

std::vector<ServeRequest> parse_trace(std::istream& in, TraceFormat format,
                                      const std::string& path) {
  const bool csv = format == TraceFormat::csv;
  std::vector<ServeRequest> out;
  std::string line;
  int64_t line_number = 0;
  std::vector<std::string> header;
  for (LineRead read; (read = read_bounded_line(in, line, kMaxTraceLineBytes)) != LineRead::end;) {
    ++line_number;
    if (read == LineRead::too_long) {
      throw InputError(fmt::format("trace '{}' line {}: longer than {} bytes", path, line_number,
                                   kMaxTraceLineBytes));
    }
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    const std::string where = fmt::format("trace '{}' line {}", path, line_number);
    std::map<std::string, double> fields;
    if (csv) {
      auto cells = split_text(line, ',');
      if (header.empty()) {
        header = cells;
        continue;
      }
      if (cells.size() != header.size()) {
        throw InputError(
            fmt::format("{}: {} columns, the header has {}", where, cells.size(), header.size()));
      }
      for (size_t i = 0; i < cells.size(); ++i) {
        if (!cells[i].empty()) fields[header[i]] = number(cells[i], where + " " + header[i]);
      }
    } else {
      nlohmann::json j;
      try {
        j = nlohmann::json::parse(line);
      } catch (const nlohmann::json::exception& e) {  // out_of_range too: "1e805"
        throw InputError(where + ": malformed JSON (" + e.what() + ")");
      }
      if (!j.is_object()) throw InputError(where + ": not a JSON object");
      for (auto it = j.begin(); it != j.end(); ++it) {
        if (!it.value().is_number())
          throw InputError(where + ": '" + it.key() + "' is not a number");
        fields[it.key()] = it.value().get<double>();
      }
    }
    out.push_back(request_from_fields(fields, where));
    if (static_cast<int64_t>(out.size()) > kMaxRequests) {
      throw InputError("trace '" + path + "' has more than 2^24 requests");
    }
  }
  if (out.empty()) throw InputError("trace '" + path + "' has no requests");
  return out;
}

namespace {

std::vector<int32_t> draw_ids(uint64_t seed, uint64_t stream, int64_t count, int64_t vocab) {
  uint64_t mix = seed ^ (0x9e3779b97f4a7c15ULL * (stream + 1));
  Xoshiro256 rng(splitmix64(mix));
  std::vector<int32_t> ids(static_cast<size_t>(count));
  for (auto& id : ids) id = static_cast<int32_t>(rng.next() % static_cast<uint64_t>(vocab));
  return ids;
}

}  // namespace

std::vector<int32_t> synthetic_prompt(const ServeRequest& request, size_t index, uint64_t seed,
                                      int64_t vocab) {
  std::vector<int32_t> prompt = draw_ids(seed, 2 * index, request.prompt_tokens, vocab);
  if (request.prefix_id >= 0 && request.prefix_tokens > 0) {
    const auto prefix = draw_ids(seed, 2 * static_cast<uint64_t>(request.prefix_id) + 1,
                                 std::min(request.prefix_tokens, request.prompt_tokens), vocab);
    std::copy(prefix.begin(), prefix.end(), prompt.begin());
  }
  return prompt;
}

}  // namespace inferlab
