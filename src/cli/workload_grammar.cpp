#include "cli/workload_grammar.hpp"

#include <fmt/format.h>

#include <fstream>
#include <vector>

#include "util/enum_names.hpp"
#include "util/error.hpp"
#include "util/field_error.hpp"
#include "util/text.hpp"

namespace inferlab::cli {

namespace {
constexpr int64_t kMaxTokens = kMaxWorkloadTokens;

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

}  // namespace

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

}  // namespace inferlab::cli
