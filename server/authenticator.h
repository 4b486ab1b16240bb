// Bearer-token authentication of perfcastd's calls.
//
// Every perfcast.v1 handler, synchronous or callback, calls Check() as its
// first statement, before it reads a message or touches the store; a call
// that fails it ends with UNAUTHENTICATED and has changed nothing. The
// standard grpc.health.v1 health and reflection services do not call it, so
// probes work without a token.
//
// Why a check in each handler rather than gRPC's own hooks (gRPC 1.51):
//  - grpc::AuthMetadataProcessor runs only on secure server credentials
//    (InsecureServerCredentials::SetAuthMetadataProcessor aborts), and
//    perfcastd also serves plaintext, e.g. on loopback or behind a TLS proxy.
//  - server interceptors cannot end a call with a status of their choosing,
//    only cancel it (the client would see CANCELLED, not UNAUTHENTICATED).
//  - authorization policies answer PERMISSION_DENIED and hold tokens in plain
//    policy text compared with ordinary string equality.
// A forgotten check is caught by tests/server/auth_test.cc, which calls every
// method of every perfcast.v1 service without a token.
//
// Thread-safe: immutable after construction.
#ifndef PERFCAST_SERVER_AUTHENTICATOR_H_
#define PERFCAST_SERVER_AUTHENTICATOR_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "grpcpp/server_context.h"
#include "grpcpp/support/status.h"
#include "server/logger.h"

namespace perfcast::server {

// Reads a token file: one token per line; surrounding whitespace, blank lines
// and lines starting with '#' are ignored. InvalidArgument when the file
// cannot be read, holds no token, or holds a token with a character that
// cannot travel in an HTTP/2 header (the message names the line, never the
// token).
absl::StatusOr<std::vector<std::string>> ReadTokenFile(const std::string& path);

// True when `a` and `b` are equal, in time that depends only on `a`'s length
// (the presented token's), not on where they first differ.
bool ConstantTimeEquals(absl::string_view a, absl::string_view b);

class Authenticator {
 public:
  // Accepts calls carrying "authorization: Bearer <t>" for any `t` in
  // `tokens`. With no tokens, authentication is off and every call passes.
  // `logger` must outlive the authenticator.
  Authenticator(std::vector<std::string> tokens, Logger& logger)
      : tokens_(std::move(tokens)), logger_(logger) {}
  Authenticator(const Authenticator&) = delete;
  Authenticator& operator=(const Authenticator&) = delete;

  bool enabled() const { return !tokens_.empty(); }

  // OK if the call may proceed. UNAUTHENTICATED (logged as a warning with
  // `method` and the peer, never the presented token) when authentication is
  // on and the call has no bearer token or an unknown one.
  grpc::Status Check(const grpc::ServerContextBase& context, absl::string_view method) const;

 private:
  std::vector<std::string> tokens_;
  Logger& logger_;
};

}  // namespace perfcast::server

#endif  // PERFCAST_SERVER_AUTHENTICATOR_H_
