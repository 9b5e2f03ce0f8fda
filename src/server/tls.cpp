#include "server/tls.hpp"

// cpp-httplib's SSLServer exists with CPPHTTPLIB_OPENSSL_SUPPORT, which Debian's cpp-httplib
// defines for every user (its pkg-config flags): its shared library is built with it and the
// classes' layout depends on it, so no translation unit may leave it out (CMakeLists.txt).
#include <httplib.h>
#include <openssl/err.h>

#include <fstream>

#include "util/error.hpp"

namespace inferlab::server {

namespace {

void check_readable(const std::string& path, const char* flag) {
  if (!std::ifstream(path))
    throw InputError(std::string("cannot read ") + flag + " '" + path + "'");
}

// OpenSSL's reason for the last failure, for the message.
std::string openssl_reason() {
  const unsigned long code = ERR_peek_last_error();
  if (code == 0) return "not a PEM certificate and private key that belong together";
  char text[256];
  ERR_error_string_n(code, text, sizeof text);
  ERR_clear_error();
  return text;
}

}  // namespace

std::unique_ptr<httplib::Server> make_http_server(const TlsFiles& tls) {
  if (!tls.enabled()) return std::make_unique<httplib::Server>();
  if (tls.certfile.empty() || tls.keyfile.empty()) {
    throw InputError("HTTPS needs both --ssl-certfile and --ssl-keyfile");
  }
  check_readable(tls.certfile, "--ssl-certfile");
  check_readable(tls.keyfile, "--ssl-keyfile");
  ERR_clear_error();
  auto server = std::make_unique<httplib::SSLServer>(tls.certfile.c_str(), tls.keyfile.c_str());
  if (!server->is_valid()) {
    throw InputError("OpenSSL refused --ssl-certfile '" + tls.certfile + "' with --ssl-keyfile '" +
                     tls.keyfile + "': " + openssl_reason());
  }
  return server;
}

void check_tls_files(const TlsFiles& tls) {
  make_http_server(tls);
}

}  // namespace inferlab::server
