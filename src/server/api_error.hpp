#pragma once
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

namespace inferlab::server {

// A request the server refuses, with the HTTP status and OpenAI's error fields:
// {"error": {"message", "type", "param", "code"}}.
class ApiError : public std::runtime_error {
 public:
  ApiError(int status, std::string message, std::string param = "", std::string code = "",
           std::string type = "")
      : std::runtime_error(message),
        status_(status),
        param_(std::move(param)),
        code_(std::move(code)),
        type_(type.empty() ? default_type(status) : std::move(type)) {}
  int status() const { return status_; }
  nlohmann::json body() const;

 private:
  static std::string default_type(int status);
  int status_;
  std::string param_, code_, type_;
};

}  // namespace inferlab::server
