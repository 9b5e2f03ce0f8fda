#include "model/moe_routing.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "model/step_graph.hpp"
#include "util/data_dir.hpp"
#include "util/error.hpp"
#include "util/json_file.hpp"

namespace inferlab {

namespace {
int64_t count_field(const nlohmann::json& j, const char* key, const std::string& context) {
  if (!j.contains(key) || !j[key].is_number_integer()) {
    throw InputError(context + ": missing integer field '" + key + "'");
  }
  return j[key].get<int64_t>();
}
}  // namespace

void attach_moe_routing(const nlohmann::json& routing, ModelConfig& model,
                        const std::string& context) {
  if (!routing.is_object()) throw InputError(context + ": not a JSON object");
  const int64_t experts = count_field(routing, "num_experts", context);
  const int64_t top_k = count_field(routing, "experts_per_token", context);
  if (experts != model.num_experts || top_k != model.experts_per_token) {
    throw InputError(context + ": routing of " + std::to_string(top_k) + " of " +
                     std::to_string(experts) + " experts for a model of " +
                     std::to_string(model.experts_per_token) + " of " +
                     std::to_string(model.num_experts));
  }
  const char* key = "sequence_experts_reached";
  if (!routing.contains(key) || !routing[key].is_array() || routing[key].empty()) {
    throw InputError(context + ": missing non-empty array '" + key + "'");
  }
  std::vector<std::pair<int64_t, double>> points;
  for (const auto& p : routing[key]) {
    if (!p.is_array() || p.size() != 2 || !p[0].is_number_integer() || !p[1].is_number()) {
      throw InputError(context + ": each of '" + key + "' must be [tokens, experts]");
    }
    const int64_t tokens = p[0].get<int64_t>();
    const double reached = p[1].get<double>();
    if (tokens < 1 || (!points.empty() && tokens <= points.back().first)) {
      throw InputError(context + ": the tokens of '" + key + "' must be increasing counts");
    }
    const double most = static_cast<double>(std::min(experts, top_k * tokens));
    if (!std::isfinite(reached) || reached < static_cast<double>(top_k) || reached > most) {
      throw InputError(context + ": " + std::to_string(tokens) + " tokens cannot reach " +
                       std::to_string(reached) + " experts (" + std::to_string(top_k) + " to " +
                       std::to_string(static_cast<int64_t>(most)) + ")");
    }
    points.emplace_back(tokens, reached);
  }
  model.moe_sequence_reached = std::move(points);
  model.moe_routing_source = routing.value("source", std::string("(no source given)"));
}

void attach_shipped_moe_routing(ModelConfig& model) {
  if (!model.is_moe() || model.name.empty()) return;
  const std::filesystem::path path = data_dir() / "routing" / (model.name + ".json");
  if (!std::filesystem::exists(path)) return;
  attach_moe_routing(read_json_file(path, "routing"), model, "routing '" + path.string() + "'");
}

double sequence_experts_reached(const ModelConfig& model, int64_t tokens) {
  const auto& points = model.moe_sequence_reached;
  if (points.empty()) {
    return expected_active_experts(model.num_experts, model.experts_per_token, tokens);
  }
  const double k = static_cast<double>(model.experts_per_token);
  if (tokens <= 1) return k;
  // Below the first point: from (1 token, k experts) to it.
  std::pair<double, double> below{1.0, k};
  for (const auto& [at, reached] : points) {
    if (tokens <= at) {
      const double span = std::log(static_cast<double>(at)) - std::log(below.first);
      const double f =
          span > 0.0 ? (std::log(static_cast<double>(tokens)) - std::log(below.first)) / span : 1.0;
      return below.second + f * (reached - below.second);
    }
    below = {static_cast<double>(at), reached};
  }
  return points.back().second;
}

double expected_active_experts(const ModelConfig& model, int64_t sequences,
                               int64_t tokens_per_sequence) {
  const double e = static_cast<double>(model.num_experts);
  const double one = std::min(e, sequence_experts_reached(model, tokens_per_sequence));
  return e * (1.0 - std::pow(1.0 - one / e, static_cast<double>(std::max<int64_t>(1, sequences))));
}

}  // namespace inferlab
