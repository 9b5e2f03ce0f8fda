#include "server/api_keys.hpp"

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include <fstream>
#include <stdexcept>

#include "util/error.hpp"

namespace inferlab::server {

namespace {

std::array<unsigned char, 32> sha256(std::string_view text) {
  std::array<unsigned char, 32> digest{};
  unsigned int size = 0;
  if (EVP_Digest(text.data(), text.size(), digest.data(), &size, EVP_sha256(), nullptr) != 1 ||
      size != digest.size()) {
    throw std::runtime_error("SHA-256 failed (OpenSSL)");
  }
  return digest;
}

bool usable_key(std::string_view key) {
  if (key.empty()) return false;
  for (unsigned char c : key) {
    if (c <= 0x20 || c == 0x7f) return false;
  }
  return true;
}

std::string_view trimmed(std::string_view text) {
  const auto first = text.find_first_not_of(" \t\r");
  if (first == std::string_view::npos) return {};
  const auto last = text.find_last_not_of(" \t\r");
  return text.substr(first, last - first + 1);
}

}  // namespace

ApiKeys::ApiKeys(const std::vector<std::string>& keys) {
  for (size_t i = 0; i < keys.size(); ++i) {
    if (!usable_key(keys[i])) {
      throw InputError("API key " + std::to_string(i + 1) + " of " + std::to_string(keys.size()) +
                       " is empty or holds a space or a control character");
    }
    digests_.push_back(sha256(keys[i]));
  }
}

bool ApiKeys::authorizes(std::string_view authorization) const {
  constexpr std::string_view kScheme = "bearer ";
  if (authorization.size() <= kScheme.size()) return false;
  for (size_t i = 0; i < kScheme.size(); ++i) {  // the scheme is no secret: an early exit is fine
    const char c = authorization[i];
    if ((c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c) != kScheme[i]) return false;
  }
  const auto presented = sha256(trimmed(authorization.substr(kScheme.size())));
  int matches = 0;
  for (const auto& digest : digests_) {
    matches |= CRYPTO_memcmp(presented.data(), digest.data(), digest.size()) == 0 ? 1 : 0;
  }
  return matches != 0;
}

std::vector<std::string> read_api_key_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError("cannot read the API key file '" + path + "'");
  std::vector<std::string> keys;
  std::string line;
  while (std::getline(in, line)) {
    const std::string_view key = trimmed(line);
    if (!key.empty() && key.front() != '#') keys.emplace_back(key);
  }
  if (in.bad()) throw InputError("cannot read the API key file '" + path + "'");
  if (keys.empty()) throw InputError("the API key file '" + path + "' holds no key");
  return keys;
}

}  // namespace inferlab::server
