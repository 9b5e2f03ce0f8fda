#pragma once
#include <array>
#include <string>
#include <string_view>
#include <vector>

namespace inferlab::server {

// The keys a server accepts (`--api-key`, INFERLAB_API_KEY, `--api-key-file`), kept only as
// SHA-256 digests and checked in constant time.
class ApiKeys {
 public:
  ApiKeys() = default;  // no key: every request passes
  // InputError for a key that is empty or holds a space or a control character (it could not
  // travel in an `Authorization: Bearer` header); the message never repeats the key.
  explicit ApiKeys(const std::vector<std::string>& keys);
  bool empty() const { return digests_.empty(); }
  size_t size() const { return digests_.size(); }
  // Whether an Authorization header's value is "Bearer <one of the keys>" (the scheme in any
  // case, as RFC 7235 has it). The presented key is hashed and its digest compared with every
  // key's digest by CRYPTO_memcmp, all of them, whatever matched: the time depends neither on
  // where a wrong key differs nor on which key it is, only on the header's length, which the
  // server cannot help reading.
  bool authorizes(std::string_view authorization) const;

 private:
  std::vector<std::array<unsigned char, 32>> digests_;
};

// The keys of a file, one a line; blank lines, lines starting with '#' and the spaces around a
// key are skipped. InputError when the file cannot be read or holds no key.
std::vector<std::string> read_api_key_file(const std::string& path);

}  // namespace inferlab::server
