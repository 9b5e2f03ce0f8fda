// Who may call the server: API keys (Bearer, constant-time digests; one answer for a missing and
// a wrong key), the routes that stay open, and HTTPS with a self-signed certificate.
#include "server/api_keys.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "self_signed_cert.hpp"
#include "server_test_support.hpp"
#include "skip_without_tokenizer.hpp"
#include "util/error.hpp"

namespace inferlab::server {
namespace {

using nlohmann::json;
using testing::TestServer;

std::filesystem::path scratch(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() /
             ("inferlab_api_keys_" + name + "_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  return dir;
}

TEST(ApiKeys, AcceptOnlyABearerOfAKey) {
  const ApiKeys keys({"sk-first", "second-key"});
  EXPECT_EQ(keys.size(), 2u);
  EXPECT_TRUE(keys.authorizes("Bearer sk-first"));
  EXPECT_TRUE(keys.authorizes("bearer second-key"));  // the scheme in any case
  EXPECT_TRUE(keys.authorizes("Bearer  sk-first "));  // spaces around the key
  EXPECT_FALSE(keys.authorizes("Bearer sk-firs"));    // a prefix
  EXPECT_FALSE(keys.authorizes("Bearer sk-first2"));  // longer
  EXPECT_FALSE(keys.authorizes("Bearer sk-firsT"));   // the last byte
  EXPECT_FALSE(keys.authorizes("Basic sk-first"));
  EXPECT_FALSE(keys.authorizes("sk-first"));
  EXPECT_FALSE(keys.authorizes("Bearer "));
  EXPECT_FALSE(keys.authorizes(""));
  EXPECT_TRUE(ApiKeys().empty());
}

TEST(ApiKeys, UnusableKeysAreRefusedWithoutRepeatingThem) {
  for (const std::string& key : {std::string(), std::string("two words"), std::string("tab\there"),
                                 std::string("new\nline")}) {
    try {
      ApiKeys({"fine", key});
      ADD_FAILURE() << "accepted '" << key << "'";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("API key 2 of 2"), std::string::npos) << e.what();
      if (!key.empty()) {
        EXPECT_EQ(std::string(e.what()).find(key), std::string::npos);
      }
    }
  }
}

TEST(ApiKeys, KeyFilesHoldOneKeyALine) {
  const auto dir = scratch("file");
  std::ofstream(dir / "keys") << "# the team's keys\n\n  key-one  \r\nkey-two\n";
  EXPECT_EQ(read_api_key_file((dir / "keys").string()),
            (std::vector<std::string>{"key-one", "key-two"}));
  std::ofstream(dir / "empty") << "# none yet\n\n";
  EXPECT_THROW(read_api_key_file((dir / "empty").string()), InputError);
  EXPECT_THROW(read_api_key_file((dir / "missing").string()), InputError);
  std::filesystem::remove_all(dir);
}

TEST(OpenAiServerAuth, V1RoutesNeedAKeyHealthAndMetricsStayOpen) {
  SKIP_WITHOUT_TOKENIZER();
  testing::ServerSetup setup;
  setup.api_keys = {"sk-right", "sk-other"};
  TestServer server(setup);
  auto client = server.client();
  const json completion = testing::greedy("Hello", 3);
  const auto call = [&](const std::string& path, const httplib::Headers& headers) {
    auto res = path == "/v1/completions"
                   ? client.Post(path.c_str(), headers, completion.dump(), "application/json")
                   : client.Get(path.c_str(), headers);
    if (!res) throw std::runtime_error("no response");
    return *res;
  };
  const httplib::Headers none, wrong = {{"Authorization", "Bearer sk-wrong"}},
                               right = {{"Authorization", "Bearer sk-right"}},
                               other = {{"Authorization", "Bearer sk-other"}};
  std::string first_message;
  for (const auto& path : {"/v1/models", "/v1/completions", "/v1/nothing"}) {
    for (const auto& headers : {none, wrong}) {
      const httplib::Response res = call(path, headers);
      EXPECT_EQ(res.status, 401) << path;
      EXPECT_EQ(res.get_header_value("WWW-Authenticate"), "Bearer");
      const json error = json::parse(res.body, nullptr, false);
      ASSERT_FALSE(error.is_discarded()) << res.body;
      EXPECT_EQ(error["error"]["type"], "invalid_request_error");
      EXPECT_EQ(error["error"]["code"], "invalid_api_key");
      // One answer whatever was wrong: nothing tells a missing key from a wrong one.
      if (first_message.empty()) first_message = error["error"]["message"];
      EXPECT_EQ(error["error"]["message"], first_message);
    }
  }
  EXPECT_EQ(call("/v1/models", right).status, 200);
  const httplib::Response answer = call("/v1/completions", other);
  EXPECT_EQ(answer.status, 200);
  EXPECT_EQ(json::parse(answer.body)["usage"]["completion_tokens"], 3);
  EXPECT_EQ(call("/v1/nothing", right).status, 404);  // past the key, the route
  EXPECT_EQ(call("/health", none).status, 200);
  EXPECT_EQ(call("/metrics", none).status, 200);
  // The six 401s are counted as refusals.
  const std::string metrics = call("/metrics", none).body;
  EXPECT_NE(metrics.find("status=\"4xx\"} 6"), std::string::npos) << metrics;
}

TEST(OpenAiServerAuth, ProtectedMetricsNeedTheKeyToo) {
  SKIP_WITHOUT_TOKENIZER();
  testing::ServerSetup setup;
  setup.api_keys = {"sk-right"};
  setup.protect_metrics = true;
  TestServer server(setup);
  auto client = server.client();
  EXPECT_EQ(client.Get("/metrics")->status, 401);
  EXPECT_EQ(client.Get("/metrics", {{"Authorization", "Bearer sk-right"}})->status, 200);
  EXPECT_EQ(client.Get("/health")->status, 200);
}

TEST(OpenAiServerAuth, HttpsWithASelfSignedCertificate) {
  SKIP_WITHOUT_TOKENIZER();
  const auto dir = scratch("tls");
  const auto files = testing::write_self_signed_cert(dir);
  testing::ServerSetup setup;
  setup.tls = {files.cert, files.key};
  setup.api_keys = {"sk-right"};
  TestServer server(setup);
  EXPECT_TRUE(server.http().https());
  int status = 0;
  const json answer = testing::post(server, "/v1/completions", testing::greedy("Hello", 3), &status,
                                    {{"Authorization", "Bearer sk-right"}});
  EXPECT_EQ(status, 200);
  EXPECT_EQ(answer["usage"]["completion_tokens"], 3);
  // Plain HTTP on the same port gets no answer.
  httplib::Client plain("http://127.0.0.1:" + std::to_string(server.port()));
  plain.set_read_timeout(5, 0);
  EXPECT_FALSE(plain.Get("/health"));
  // A client that does not trust the certificate gets no answer either.
  httplib::Client untrusting(server.url());
  untrusting.set_ca_cert_path((dir / "key.pem").string());
  EXPECT_FALSE(untrusting.Get("/health"));
  std::filesystem::remove_all(dir);
}

TEST(OpenAiServerAuth, UnusableCertificateFilesAreInputErrors) {
  const auto dir = scratch("badtls");
  const auto files = testing::write_self_signed_cert(dir);
  std::ofstream(dir / "garbage.pem") << "not a certificate\n";
  EXPECT_THROW(check_tls_files({files.cert, ""}), InputError);
  EXPECT_THROW(check_tls_files({(dir / "missing.pem").string(), files.key}), InputError);
  EXPECT_THROW(check_tls_files({(dir / "garbage.pem").string(), files.key}), InputError);
  EXPECT_THROW(check_tls_files({files.cert, (dir / "garbage.pem").string()}), InputError);
  EXPECT_NO_THROW(check_tls_files({files.cert, files.key}));
  EXPECT_NO_THROW(check_tls_files({}));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace inferlab::server
