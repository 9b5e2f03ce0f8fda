#pragma once
#include <memory>
#include <string>

namespace httplib {
class Server;
}

namespace inferlab::server {

// The PEM files of `--ssl-certfile` and `--ssl-keyfile`: both empty for plain HTTP.
struct TlsFiles {
  std::string certfile, keyfile;
  bool enabled() const { return !certfile.empty() || !keyfile.empty(); }
};

// A cpp-httplib server: plain HTTP, or HTTPS (its SSLServer over OpenSSL) with the certificate
// chain and private key of `tls`. InputError when only one file is given, a file cannot be read,
// or OpenSSL refuses them (not PEM, a key that does not match the certificate).
std::unique_ptr<httplib::Server> make_http_server(const TlsFiles& tls);
// make_http_server's checks alone (a command checks its flags before it loads anything).
void check_tls_files(const TlsFiles& tls);

}  // namespace inferlab::server
