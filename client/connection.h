// How the perfcast CLI and perfcast-agent reach perfcastd: plaintext or TLS
// (with a client certificate for servers that require one), and the bearer
// token every call carries when the server demands one.
#ifndef PERFCAST_CLIENT_CONNECTION_H_
#define PERFCAST_CLIENT_CONNECTION_H_

#include <memory>
#include <string>

#include "CLI/CLI.hpp"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "grpcpp/grpcpp.h"

namespace perfcast::client {

// Largest message the client sends or accepts; matches perfcastd's default
// --max_message_bytes.
inline constexpr int kMaxMessageBytes = 64 << 20;

struct ConnectionFlags {
  std::string tls_ca;      // --tls-ca / $PERFCAST_TLS_CA: PEM file; set: use TLS
  std::string tls_cert;    // --tls-cert: client certificate (PEM file), for mTLS
  std::string tls_key;     // --tls-key: its private key
  std::string token;       // --token / $PERFCAST_TOKEN
  std::string token_file;  // --token-file: first token in the file
};

// Adds --tls-ca, --tls-cert, --tls-key, --token and --token-file to `app`.
void AddConnectionFlags(CLI::App& app, ConnectionFlags& flags);

// A channel to `server` (host:port) as `flags` say. InvalidArgument when a
// file cannot be read or is not PEM, a client certificate comes without its
// key (or without --tls-ca), or both --token and --token-file are given.
absl::StatusOr<std::shared_ptr<grpc::Channel>> OpenChannel(const std::string& server,
                                                           const ConnectionFlags& flags);

// What to check after a failed call whose error (as Describe writes it) is
// `message`: a TLS mismatch shows only as a connection that could not be
// made, so such an UNAVAILABLE gets a hint about --tls-ca (and client
// certificates when `tls` is on). Empty for anything else: a refused
// connection (nothing listens), a connection lost mid-call.
std::string ConnectionHint(absl::string_view message, bool tls);

}  // namespace perfcast::client

#endif  // PERFCAST_CLIENT_CONNECTION_H_
