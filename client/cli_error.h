// Errors of CLI commands. A command returns a CliError on failure; main()
// prints "perfcast: <message>" on one line and exits with `exit_code`.
#ifndef PERFCAST_CLIENT_CLI_ERROR_H_
#define PERFCAST_CLIENT_CLI_ERROR_H_

#include <string>

#include "absl/status/status.h"
#include "grpcpp/support/status.h"

namespace perfcast::client {

// Exit codes: 1 a failed call or bad input; 2 bad usage (CLI11's own);
// 3 an import that stored the valid records but rejected some.
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitPartial = 3;

struct CliError {
  int exit_code = kExitFailure;
  std::string message;
};

// "NOT_FOUND: no node named 'x'" style text for a failed RPC.
std::string Describe(const grpc::Status& status);
std::string Describe(const absl::Status& status);

}  // namespace perfcast::client

#endif  // PERFCAST_CLIENT_CLI_ERROR_H_
