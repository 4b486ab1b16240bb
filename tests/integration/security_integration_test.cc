// TLS, mutual TLS and bearer tokens end to end: a real perfcastd with the
// security flags, driven by the real perfcast CLI, over a throwaway PKI that
// make_test_pki.sh generates with the openssl tool for each test.
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "tests/db/test_util.h"
#include "tests/integration/process_harness.h"

namespace perfcast::testing {
namespace {

constexpr char kToken[] = "integration-token-4f9a1c";

void WriteFile(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

std::vector<std::string> Lines(const std::string& text) {
  return absl::StrSplit(text, '\n', absl::SkipEmpty());
}

// A failed command: exit code 1 and one line "perfcast: CODE: message".
void ExpectOneLineFailure(const CommandResult& result, const std::string& code) {
  EXPECT_EQ(result.exit_code, 1) << result.err;
  EXPECT_EQ(Lines(result.err).size(), 1u) << result.err;
  EXPECT_TRUE(absl::StartsWith(result.err, "perfcast: " + code)) << result.err;
}

// grpc.health.v1.Health/Check("") over `credentials`, without any token.
grpc::Status HealthCheck(const std::string& address,
                         const std::shared_ptr<grpc::ChannelCredentials>& credentials) {
  grpc::GenericStub stub(grpc::CreateChannel(address, credentials));
  grpc::CompletionQueue cq;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  grpc::Slice nothing("", 0);  // HealthCheckRequest{service: ""} is empty
  grpc::ByteBuffer request(&nothing, 1), response;
  grpc::Status status;
  auto call = stub.PrepareUnaryCall(&context, "/grpc.health.v1.Health/Check", request, &cq);
  call->StartCall();
  call->Finish(&response, &status, reinterpret_cast<void*>(1));
  void* tag;
  bool ok;
  EXPECT_TRUE(cq.Next(&tag, &ok));
  cq.Shutdown();
  while (cq.Next(&tag, &ok)) {
  }
  return status;
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

class SecurityIntegrationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    CommandResult pki = RunCommand({"/bin/bash", PERFCAST_MAKE_TEST_PKI, dir_.path().string()});
    ASSERT_EQ(pki.exit_code, 0) << pki.err;
    WriteFile(File("tokens"), std::string("# test tokens\n\nold-token-0000\n") + kToken + "\n");
    WriteFile(File("my-token"), std::string(kToken) + "\n");
    WriteFile(File("runs.csv"),
              "gpu,family,params,batch_size,mean_ms\n"
              "H100-SXM5-80GB,lstm,layers=2;hidden=256,64,12.5\n"
              "H100-SXM5-80GB,lstm,layers=4;hidden=256,64,23.0\n");
  }

  std::string File(const std::string& name) const { return dir_.File(name); }
  std::vector<std::string> TlsServerFlags() const {
    return {"--tls_cert=" + File("server.pem"), "--tls_key=" + File("server.key")};
  }

  TempDir dir_;
};

TEST_F(SecurityIntegrationTest, TlsWorksWithTheCaAndFailsWithout) {
  ServerProcess server(File("perfcast.db"), TlsServerFlags());
  ASSERT_TRUE(server.started());
  const std::string ca = File("ca.pem");
  CommandResult registered = server.Cli({"--tls-ca", ca, "nodes", "register", "--name", "n1",
                                         "--gpu", "H100-SXM5-80GB"});
  ASSERT_EQ(registered.exit_code, 0) << registered.err;
  CommandResult listed = server.Cli({"--tls-ca", ca, "nodes", "list"});
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  EXPECT_NE(listed.out.find("n1"), std::string::npos) << listed.out;

  // A plaintext client cannot talk to a TLS server, nor can a client that
  // trusts another CA.
  ExpectOneLineFailure(server.Cli({"nodes", "list"}), "UNAVAILABLE");
  ExpectOneLineFailure(server.Cli({"--tls-ca", File("other-ca.pem"), "nodes", "list"}),
                       "UNAVAILABLE");
  // The CA may come from the environment.
  setenv("PERFCAST_TLS_CA", ca.c_str(), 1);
  CommandResult from_env = server.Cli({"nodes", "list"});
  unsetenv("PERFCAST_TLS_CA");
  EXPECT_EQ(from_env.exit_code, 0) << from_env.err;
  // A CA file that is not PEM is a usage problem found before any call.
  ExpectOneLineFailure(server.Cli({"--tls-ca", File("runs.csv"), "nodes", "list"}),
                       "INVALID_ARGUMENT");
}

TEST_F(SecurityIntegrationTest, MutualTlsRequiresAClientCertificateFromTheCa) {
  std::vector<std::string> flags = TlsServerFlags();
  flags.push_back("--tls_client_ca=" + File("ca.pem"));
  ServerProcess server(File("perfcast.db"), flags);
  ASSERT_TRUE(server.started());
  const std::string ca = File("ca.pem");
  ExpectOneLineFailure(server.Cli({"--tls-ca", ca, "nodes", "list"}), "UNAVAILABLE");
  ExpectOneLineFailure(server.Cli({"--tls-ca", ca, "--tls-cert", File("stranger.pem"),
                                   "--tls-key", File("stranger.key"), "nodes", "list"}),
                       "UNAVAILABLE");
  CommandResult ok = server.Cli({"--tls-ca", ca, "--tls-cert", File("client.pem"), "--tls-key",
                                 File("client.key"), "nodes", "list"});
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  // A certificate without its key is refused before connecting.
  CommandResult half = server.Cli({"--tls-ca", ca, "--tls-cert", File("client.pem"), "nodes",
                                   "list"});
  ExpectOneLineFailure(half, "INVALID_ARGUMENT");
}

TEST_F(SecurityIntegrationTest, CallsWithoutTheTokenAreRefusedAndChangeNothing) {
  ServerProcess server(File("perfcast.db"), {"--token_file=" + File("tokens")});
  ASSERT_TRUE(server.started());
  const std::vector<std::string> register_n1 = {"nodes", "register", "--name", "n1", "--gpu",
                                                "H100-SXM5-80GB"};
  auto with = [](std::vector<std::string> prefix, const std::vector<std::string>& args) {
    prefix.insert(prefix.end(), args.begin(), args.end());
    return prefix;
  };

  ExpectOneLineFailure(server.Cli(register_n1), "UNAUTHENTICATED");
  ExpectOneLineFailure(server.Cli(with({"--token", "not-the-token"}, register_n1)),
                       "UNAUTHENTICATED");
  ExpectOneLineFailure(server.Cli({"import", File("runs.csv")}), "UNAUTHENTICATED");
  ExpectOneLineFailure(server.Cli({"nodes", "list"}), "UNAUTHENTICATED");
  // Nothing of the refused calls was stored.
  CommandResult nodes = server.Cli({"--token", kToken, "--output", "json", "nodes", "list"});
  ASSERT_EQ(nodes.exit_code, 0) << nodes.err;
  EXPECT_EQ(nodes.out.find("n1"), std::string::npos) << nodes.out;
  EXPECT_EQ(nodes.out.find("H100"), std::string::npos) << nodes.out;
  CommandResult exported = server.Cli({"--token", kToken, "export"});
  ASSERT_EQ(exported.exit_code, 0) << exported.err;
  EXPECT_LE(Lines(exported.out).size(), 1u) << exported.out;  // a CSV header at most

  // The right token, from the flag, a file or the environment.
  CommandResult registered = server.Cli(with({"--token", kToken}, register_n1));
  EXPECT_EQ(registered.exit_code, 0) << registered.err;
  CommandResult imported = server.Cli({"--token-file", File("my-token"), "import",
                                       File("runs.csv")});
  EXPECT_EQ(imported.exit_code, 0) << imported.err;
  setenv("PERFCAST_TOKEN", kToken, 1);
  CommandResult listed = server.Cli({"nodes", "list"});
  exported = server.Cli({"export"});
  unsetenv("PERFCAST_TOKEN");
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  EXPECT_NE(listed.out.find("n1"), std::string::npos) << listed.out;
  ASSERT_EQ(exported.exit_code, 0) << exported.err;
  EXPECT_EQ(Lines(exported.out).size(), 3u) << exported.out;  // header and two profiles

  // --token and --token-file together are a usage error.
  EXPECT_EQ(server.Cli({"--token", kToken, "--token-file", File("my-token"), "nodes", "list"})
                .exit_code,
            2);
}

TEST_F(SecurityIntegrationTest, TokenAndTlsTogetherAndHealthNeedsNoToken) {
  std::vector<std::string> flags = TlsServerFlags();
  flags.push_back("--token_file=" + File("tokens"));
  ServerProcess server(File("perfcast.db"), flags);
  ASSERT_TRUE(server.started());
  const std::string ca = File("ca.pem");
  ExpectOneLineFailure(server.Cli({"--tls-ca", ca, "nodes", "list"}), "UNAUTHENTICATED");
  CommandResult ok = server.Cli({"--tls-ca", ca, "--token", kToken, "nodes", "list"});
  EXPECT_EQ(ok.exit_code, 0) << ok.err;

  grpc::SslCredentialsOptions ssl;
  ssl.pem_root_certs = ReadAll(ca);
  grpc::Status health = HealthCheck(server.address(), grpc::SslCredentials(ssl));
  EXPECT_TRUE(health.ok()) << health.error_code() << ": " << health.error_message();
}

TEST_F(SecurityIntegrationTest, PerfcastdRefusesToStartWithoutUsableSecurityFiles) {
  WriteFile(File("no-tokens"), "# all revoked\n\n");
  auto start = [&](std::vector<std::string> flags) {
    std::vector<std::string> argv = {PERFCASTD_PATH, "--listen=127.0.0.1:0",
                                     "--db=" + File("perfcast.db"), "--log_level=error"};
    argv.insert(argv.end(), flags.begin(), flags.end());
    return RunCommand(argv);
  };
  CommandResult empty = start({"--token_file=" + File("no-tokens")});
  EXPECT_NE(empty.exit_code, 0);
  EXPECT_NE(empty.err.find("holds no token"), std::string::npos) << empty.err;
  CommandResult missing = start({"--token_file=" + File("absent")});
  EXPECT_NE(missing.exit_code, 0);
  EXPECT_NE(missing.err.find("cannot read"), std::string::npos) << missing.err;
  CommandResult no_key = start({"--tls_cert=" + File("server.pem")});
  EXPECT_NE(no_key.exit_code, 0);
  EXPECT_NE(no_key.err.find("private key"), std::string::npos) << no_key.err;
  std::vector<std::string> not_pem = TlsServerFlags();
  not_pem.push_back("--tls_client_ca=" + File("runs.csv"));
  CommandResult bad_ca = start(not_pem);
  EXPECT_NE(bad_ca.exit_code, 0);
  EXPECT_NE(bad_ca.err.find("not readable PEM"), std::string::npos) << bad_ca.err;
}

}  // namespace
}  // namespace perfcast::testing
