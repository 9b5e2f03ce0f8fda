#pragma once
// A self-signed certificate for 127.0.0.1 and localhost (P-256 key, one day), written as PEM
// files by the OpenSSL C API: the HTTPS tests need no `openssl` program.
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>

namespace inferlab::server::testing {

struct CertFiles {
  std::string cert, key;
};

inline CertFiles write_self_signed_cert(const std::filesystem::path& dir) {
  const auto fail = [](const char* what) { throw std::runtime_error(what); };
  std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> key(EVP_EC_gen("P-256"), EVP_PKEY_free);
  if (!key) fail("EVP_EC_gen");
  std::unique_ptr<X509, decltype(&X509_free)> cert(X509_new(), X509_free);
  X509_set_version(cert.get(), 2);
  ASN1_INTEGER_set(X509_get_serialNumber(cert.get()), 1);
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -60);
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), 24 * 3600);
  X509_set_pubkey(cert.get(), key.get());
  X509_NAME* name = X509_get_subject_name(cert.get());
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>("localhost"), -1, -1, 0);
  X509_set_issuer_name(cert.get(), name);
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, cert.get(), cert.get(), nullptr, nullptr, 0);
  for (const auto& [nid, value] : {std::pair{NID_subject_alt_name, "IP:127.0.0.1,DNS:localhost"},
                                   std::pair{NID_basic_constraints, "critical,CA:TRUE"}}) {
    X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
    if (ext == nullptr) fail("X509V3_EXT_conf_nid");
    X509_add_ext(cert.get(), ext, -1);
    X509_EXTENSION_free(ext);
  }
  if (X509_sign(cert.get(), key.get(), EVP_sha256()) == 0) fail("X509_sign");
  CertFiles files{(dir / "cert.pem").string(), (dir / "key.pem").string()};
  std::FILE* out = std::fopen(files.cert.c_str(), "w");
  if (out == nullptr || PEM_write_X509(out, cert.get()) != 1) fail("writing cert.pem");
  std::fclose(out);
  out = std::fopen(files.key.c_str(), "w");
  if (out == nullptr ||
      PEM_write_PrivateKey(out, key.get(), nullptr, nullptr, 0, nullptr, nullptr) != 1) {
    fail("writing key.pem");
  }
  std::fclose(out);
  return files;
}

}  // namespace inferlab::server::testing
