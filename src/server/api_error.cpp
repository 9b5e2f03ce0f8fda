#include "server/api_error.hpp"

namespace inferlab::server {

std::string ApiError::default_type(int status) {
  if (status == 429) return "rate_limit_error";
  if (status >= 500) return "server_error";
  return "invalid_request_error";
}

nlohmann::json ApiError::body() const {
  nlohmann::json error = {{"message", what()}, {"type", type_}};
  error["param"] = param_.empty() ? nlohmann::json(nullptr) : nlohmann::json(param_);
  error["code"] = code_.empty() ? nlohmann::json(nullptr) : nlohmann::json(code_);
  return {{"error", error}};
}

}  // namespace inferlab::server
