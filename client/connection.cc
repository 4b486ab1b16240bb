#include "client/connection.h"

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "base/status_macros.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/support/client_interceptor.h"
#include "client/request_id.h"

namespace perfcast::client {
namespace {

namespace gx = grpc::experimental;

// Adds "authorization: Bearer <token>" to every call of the channel. An
// interceptor rather than grpc::AccessTokenCredentials because gRPC sends
// call credentials only over TLS, and perfcastd may serve plaintext (on
// loopback, or behind a proxy that terminates TLS); this way every stub made
// from the channel carries the token either way.
class BearerTokenInterceptor final : public gx::Interceptor {
 public:
  explicit BearerTokenInterceptor(std::string header) : header_(std::move(header)) {}
  void Intercept(gx::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(gx::InterceptionHookPoints::PRE_SEND_INITIAL_METADATA)) {
      methods->GetSendInitialMetadata()->emplace("authorization", header_);
    }
    methods->Proceed();
  }

 private:
  std::string header_;
};

class BearerTokenFactory final : public gx::ClientInterceptorFactoryInterface {
 public:
  explicit BearerTokenFactory(const std::string& token) : header_("Bearer " + token) {}
  gx::Interceptor* CreateClientInterceptor(gx::ClientRpcInfo*) override {
    return new BearerTokenInterceptor(header_);
  }

 private:
  std::string header_;
};

absl::StatusOr<std::string> ReadFile(const std::string& flag, const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::InvalidArgumentError(absl::StrCat("cannot read --", flag, " file ", path));
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

absl::StatusOr<std::string> ReadPem(const std::string& flag, const std::string& path) {
  if (path.empty()) return std::string();
  absl::StatusOr<std::string> text = ReadFile(flag, path);
  if (text.ok() && text->find("-----BEGIN ") == std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat("--", flag, " file ", path, " is not PEM"));
  }
  return text;
}

// The first token of a token file (perfcastd's format: one per line, '#'
// comments and blank lines ignored).
absl::StatusOr<std::string> ReadToken(const std::string& path) {
  ASSIGN_OR_RETURN(std::string text, ReadFile("token-file", path));
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    line = absl::StripAsciiWhitespace(line);
    if (!line.empty() && line.front() != '#') return std::string(line);
  }
  return absl::InvalidArgumentError(absl::StrCat("--token-file ", path, " holds no token"));
}

absl::Status CheckToken(absl::string_view token) {
  for (char c : token) {
    if (c <= 0x20 || c >= 0x7f) {
      return absl::InvalidArgumentError(
          "a token may hold only visible ASCII characters, without spaces");
    }
  }
  return absl::OkStatus();
}

}  // namespace

void AddConnectionFlags(CLI::App& app, ConnectionFlags& flags) {
  app.add_option("--tls-ca", flags.tls_ca,
                 "Use TLS, trusting server certificates signed by this CA (PEM file)")
      ->envname("PERFCAST_TLS_CA");
  app.add_option("--tls-cert", flags.tls_cert,
                 "Client certificate (PEM file) for servers that require one; needs --tls-key");
  app.add_option("--tls-key", flags.tls_key, "Private key (PEM file) of --tls-cert");
  CLI::Option* token = app.add_option(
      "--token", flags.token,
      "Bearer token for servers that require one ($PERFCAST_TOKEN); visible to other local "
      "users in the process list, prefer --token-file or the variable");
  app.add_option("--token-file", flags.token_file, "Read the bearer token from this file")
      ->excludes(token);
}

absl::StatusOr<std::shared_ptr<grpc::Channel>> OpenChannel(const std::string& server,
                                                           const ConnectionFlags& flags) {
  if (flags.tls_cert.empty() != flags.tls_key.empty()) {
    return absl::InvalidArgumentError("--tls-cert and --tls-key go together");
  }
  if (!flags.tls_cert.empty() && flags.tls_ca.empty()) {
    return absl::InvalidArgumentError("a client certificate needs TLS: give --tls-ca too");
  }
  std::shared_ptr<grpc::ChannelCredentials> credentials = grpc::InsecureChannelCredentials();
  if (!flags.tls_ca.empty()) {
    grpc::SslCredentialsOptions ssl;
    for (auto [flag, path, pem] : {std::tuple("tls-ca", &flags.tls_ca, &ssl.pem_root_certs),
                                   std::tuple("tls-cert", &flags.tls_cert, &ssl.pem_cert_chain),
                                   std::tuple("tls-key", &flags.tls_key, &ssl.pem_private_key)}) {
      ASSIGN_OR_RETURN(std::string text, ReadPem(flag, *path));
      *pem = std::move(text);
    }
    credentials = grpc::SslCredentials(ssl);
  }

  std::string token = flags.token;
  if (!flags.token_file.empty()) {
    ASSIGN_OR_RETURN(std::string read, ReadToken(flags.token_file));
    token = std::move(read);
  } else if (const char* env = std::getenv("PERFCAST_TOKEN"); token.empty() && env != nullptr) {
    token = std::string(absl::StripAsciiWhitespace(env));
  }
  RETURN_IF_ERROR(CheckToken(token));

  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(kMaxMessageBytes);
  args.SetMaxSendMessageSize(kMaxMessageBytes);
  std::vector<std::unique_ptr<gx::ClientInterceptorFactoryInterface>> interceptors;
  // Every call carries an x-request-id the server logs, so a failure the CLI
  // or agent reports can be found in perfcastd's log.
  interceptors.push_back(std::make_unique<RequestIdInterceptorFactory>());
  if (!token.empty()) interceptors.push_back(std::make_unique<BearerTokenFactory>(token));
  return gx::CreateCustomChannelWithInterceptors(server, credentials, args,
                                                 std::move(interceptors));
}

std::string ConnectionHint(absl::string_view message, bool tls) {
  if (!absl::StartsWith(message, "UNAVAILABLE:") ||
      !absl::StrContains(message, "failed to connect to all addresses") ||
      absl::StrContains(message, "Connection refused")) {
    return "";
  }
  return tls ? " (check --tls-ca, and --tls-cert/--tls-key if perfcastd requires client "
               "certificates)"
             : " (if perfcastd serves TLS, pass --tls-ca)";
}

}  // namespace perfcast::client
