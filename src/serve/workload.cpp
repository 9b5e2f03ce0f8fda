#include "serve/workload.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "util/enum_names.hpp"
#include "util/error.hpp"
#include "util/field_error.hpp"
#include "util/text.hpp"

namespace inferlab {

namespace {
constexpr int64_t kMaxTokens = int64_t{1} << 20;
constexpr int64_t kMaxRequests = int64_t{1} << 24;

double number(const std::string& text, const std::string& what) {
  const auto v = parse_number(text);
  if (!v) throw InputError(what + ": '" + text + "' is not a number");
  return *v;
}

// The same for a value of a request field: the message names the field (see FieldError).
double field_number(const std::string& text, const std::string& what) {
  const auto v = parse_number(text);
  if (!v) throw FieldError(what + ": '" + text + "' is not a number");
  return *v;
}

constexpr EnumNameTable<LengthDistribution::Kind, 5> kDistributionNames = {{
    {LengthDistribution::Kind::fixed, "fixed"},
    {LengthDistribution::Kind::uniform, "uniform"},
    {LengthDistribution::Kind::normal, "normal"},
    {LengthDistribution::Kind::lognormal, "lognormal"},
    {LengthDistribution::Kind::empirical, "empirical"},
}};

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

LengthDistribution parse_length_distribution(const std::string& text, const std::string& field) {
  LengthDistribution d;
  d.text = text;
  const auto colon = text.find(':');
  const std::string kind = text.substr(0, colon);
  const std::string args = colon == std::string::npos ? "" : text.substr(colon + 1);
  const std::string what = "`" + field + "` " + text;
  auto params = [&](size_t count) {
    auto parts = split_text(args, ',');
    if (parts.size() != count) {
      throw FieldError(fmt::format("{}: {} takes {} number(s)", what, kind, count));
    }
    std::vector<double> v;
    for (const auto& p : parts) v.push_back(field_number(p, what));
    return v;
  };
  auto in_range = [&](double v) {
    if (!(v >= 1.0 && v <= static_cast<double>(kMaxTokens))) {
      throw FieldError(fmt::format("{}: token counts must be in [1, {}]", what, kMaxTokens));
    }
  };
  try {
    d.kind = parse_enum(kDistributionNames, kind, "distribution");
  } catch (const InputError& e) {
    throw FieldError(what + ": " + e.what());
  }
  using Kind = LengthDistribution::Kind;
  if (d.kind == Kind::fixed) {
    d.a = params(1)[0];
    in_range(d.a);
  } else if (d.kind == Kind::uniform) {
    auto v = params(2);
    d.a = v[0], d.b = v[1];
    in_range(d.a), in_range(d.b);
    if (d.b < d.a) throw FieldError(what + ": uniform needs LO <= HI");
  } else if (d.kind == Kind::normal || d.kind == Kind::lognormal) {
    auto v = params(2);
    d.a = v[0], d.b = v[1];
    in_range(d.a);
    if (!(d.b >= 0.0) || (d.kind == Kind::lognormal && d.b > 5.0)) {
      throw FieldError(what + ": the spread must be >= 0 (lognormal sigma at most 5)");
    }
  } else {  // empirical
    std::vector<std::string> items;
    if (!args.empty() && args[0] == '@') {
      std::ifstream in(args.substr(1));
      if (!in) throw FieldError(what + ": cannot read '" + args.substr(1) + "'");
      std::string line;
      while (std::getline(in, line)) {
        if (!line.empty() && line.find_first_not_of(" \t\r") != std::string::npos) {
          items.push_back(line.substr(0, line.find_last_not_of(" \t\r") + 1));
        }
      }
    } else {
      items = split_text(args, ',');
    }
    for (const auto& item : items) {
      const double v = field_number(item, what);
      in_range(v);
      d.values.push_back(static_cast<int64_t>(std::llround(v)));
    }
    if (d.values.empty()) throw FieldError(what + ": empirical needs at least one value");
  }
  return d;
}

ArrivalProcess parse_arrival_process(const std::string& text) {
  ArrivalProcess a;
  a.text = text;
  const auto colon = text.find(':');
  const std::string kind = text.substr(0, colon);
  const std::string args = colon == std::string::npos ? "" : text.substr(colon + 1);
  if (kind == "poisson" && args.empty()) {
    a.kind = ArrivalProcess::Kind::poisson;
  } else if (kind == "gamma") {
    a.kind = ArrivalProcess::Kind::gamma;
    a.cv = field_number(args, "`arrival` " + text);
    if (!(a.cv > 0.0 && a.cv <= 100.0)) throw FieldError("`arrival` gamma:CV needs CV in (0, 100]");
  } else if (kind == "bursty") {
    a.kind = ArrivalProcess::Kind::bursty;
    auto parts = split_text(args, ',');
    if (parts.size() != 2) throw FieldError("`arrival` bursty:PERIOD_S,DUTY takes two numbers");
    a.period_s = field_number(parts[0], "`arrival` " + text);
    a.duty = field_number(parts[1], "`arrival` " + text);
    if (!(a.period_s > 0.0) || !(a.duty > 0.0 && a.duty <= 1.0)) {
      throw FieldError("`arrival` bursty needs PERIOD_S > 0 and DUTY in (0, 1]");
    }
  } else {
    throw FieldError("unknown `arrival` '" + text +
                     "'; known: poisson, gamma:CV, bursty:PERIOD_S,DUTY");
  }
  return a;
}

SharedPrefixSpec parse_shared_prefix(const std::string& text) {
  SharedPrefixSpec p;
  for (const auto& item : split_text(text, ',')) {
    const auto eq = item.find('=');
    if (eq == std::string::npos) throw FieldError("`prefix`: '" + item + "' is not key=value");
    const std::string key = item.substr(0, eq);
    const double v = field_number(item.substr(eq + 1), "`prefix` " + key);
    if (key == "tokens") {
      if (!(v >= 1.0 && v <= static_cast<double>(kMaxTokens))) {
        throw FieldError("`prefix` tokens must be in [1, 2^20]");
      }
      p.tokens = static_cast<int64_t>(v);
    } else if (key == "groups") {
      if (!(v >= 1.0 && v <= 1e6)) throw FieldError("`prefix` groups must be in [1, 1e6]");
      p.groups = static_cast<int64_t>(v);
    } else if (key == "share") {
      if (!(v >= 0.0 && v <= 1.0)) throw FieldError("`prefix` share must be in [0, 1]");
      p.share = v;
    } else {
      throw FieldError("`prefix`: unknown key '" + key + "'; known: tokens, groups, share");
    }
  }
  if (p.tokens < 1) throw FieldError("`prefix` needs tokens=N");
  return p;
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
  std::ifstream in(path);
  if (!in) throw InputError("trace '" + path + "' does not exist or cannot be read");
  const bool csv = path.size() >= 4 && path.substr(path.size() - 4) == ".csv";
  std::vector<ServeRequest> out;
  std::string line;
  int64_t line_number = 0;
  std::vector<std::string> header;
  while (std::getline(in, line)) {
    ++line_number;
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
      } catch (const nlohmann::json::parse_error& e) {
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

}  // namespace inferlab
