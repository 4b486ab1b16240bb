// What every perfcast CLI command shares: where the server is, how to print
// results, and how long a call may take. Commands get a channel from here
// and report failures as one-line errors (see cli_error.h).
#ifndef PERFCAST_CLIENT_CLIENT_CONTEXT_H_
#define PERFCAST_CLIENT_CLIENT_CONTEXT_H_

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "client/connection.h"
#include "client/output.h"
#include "google/protobuf/message.h"
#include "grpcpp/grpcpp.h"

namespace perfcast::client {

struct ClientContext {
  std::string server = "127.0.0.1:50051";  // --server, or $PERFCAST_SERVER
  OutputFormat output = OutputFormat::kTable;  // --output table|json|yaml|csv
  bool wide = false;                        // --wide: tables never wrap
  double timeout_s = 30;                    // --timeout: deadline of unary calls
  ConnectionFlags connection;               // TLS and token (see connection.h)
  // --local: answer through perfcastd's services in this process
  // (local_server.h) instead of a server; main() says how to open them.
  bool local = false;

  // Makes Channel() open the channel to `server` as `connection` says
  // (InvalidArgument for unreadable TLS or token files).
  void ConnectOnFirstUse();
  // Makes Channel() call `open` instead (--local). main() sets one of the two
  // after parsing; opening waits for the first call so that a command's own
  // usage errors come first, before a connection or --local's fit.
  void OpenOnFirstUse(std::function<absl::StatusOr<std::shared_ptr<grpc::Channel>>()> open) {
    open_ = std::move(open);
  }

  // True for -o json, yaml or csv: the command hands its answer to Out().
  bool Structured() const { return output != OutputFormat::kTable; }
  // The writer of structured output on stdout (see output.h).
  StructuredWriter& Out();
  // `message` for Out(): as ProtoJsonValue, unset parts expanded for csv.
  nlohmann::json ToJson(const google::protobuf::Message& message) const;
  // The width tables fit: the terminal's columns ($COLUMNS, else the
  // terminal's own), or 0 (no limit) with --wide or when stdout is not a
  // terminal.
  size_t TableWidth() const;

  // The channel, opened on the first call as main() said; that opening's
  // error on every call. FailedPrecondition when main() said nothing.
  absl::StatusOr<std::shared_ptr<grpc::Channel>> Channel();

  // Sets the deadline of a unary call (streams set their own).
  void SetDeadline(grpc::ClientContext& call) const {
    call.set_deadline(std::chrono::system_clock::now() +
                      std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000)));
  }

 private:
  std::function<absl::StatusOr<std::shared_ptr<grpc::Channel>>()> open_;
  std::optional<absl::StatusOr<std::shared_ptr<grpc::Channel>>> channel_;
  std::unique_ptr<StructuredWriter> out_;
};

}  // namespace perfcast::client

#endif  // PERFCAST_CLIENT_CLIENT_CONTEXT_H_
