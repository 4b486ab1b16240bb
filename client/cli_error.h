// Errors of CLI commands. A command returns a CliError on failure; main()
// prints "perfcast: <message>" on one line and exits with `exit_code`.
#ifndef PERFCAST_CLIENT_CLI_ERROR_H_
#define PERFCAST_CLIENT_CLI_ERROR_H_

#include <string>

#include "absl/status/status.h"
#include "grpcpp/support/status.h"

namespace perfcast::client {

// Exit codes, the same for every command (kExitCodesHelp says them in
// --help, the README in full):
// 1: refused or failed: the server refused the request or could not be
//    reached, or a file could not be read or written;
// 2: usage: the command line is wrong (unknown command or flag, a malformed
//    value, a GPU, family, precision or phase the CLI does not know);
//    nothing was sent;
// 3: does not fit, or incomplete: the job does not fit the GPUs' memory, or
//    some records, queries or sweep points failed (each says why) while the
//    rest were answered or stored.
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitPartial = 3;

inline constexpr char kExitCodesHelp[] =
    "Exit codes: 0 done; 1 refused or failed (server, connection, files); 2 usage "
    "error (nothing sent); 3 does not fit, or some records/queries/points failed.";

struct CliError {
  int exit_code = kExitFailure;
  std::string message;
};

// The error of a failed call: exit 3 for a job that does not fit, else 1.
CliError CallFailed(const grpc::Status& status);

// The error of a step that failed before any call (e.g. opening the
// channel): exit 1.
CliError Failed(const absl::Status& status);

// "NOT_FOUND: no node named 'x'" style text for a failed RPC.
std::string Describe(const grpc::Status& status);
std::string Describe(const absl::Status& status);

}  // namespace perfcast::client

#endif  // PERFCAST_CLIENT_CLI_ERROR_H_
