// The server's cap on how long one call may run (perfcastd
// --max_call_seconds), next to the client's own deadline.
//
// A long handler (an import or export stream, a fit, an evaluation, a batch
// of predictions) makes one CallTimer at its start and asks Check() between
// units of work; when Check() fails the handler returns that status at once,
// storing nothing (an import rolls its transaction back). Because a handler
// blocked reading from a client that stopped sending never reaches Check(),
// the timer also cancels the call itself a second after the cap, which
// unblocks the read: a stalled client cannot hold an import transaction (and
// the database's write lock) open beyond the cap.
//
// Not copyable; used by the one handler thread that made it.
#ifndef PERFCAST_SERVER_CALL_TIMER_H_
#define PERFCAST_SERVER_CALL_TIMER_H_

#include <memory>

#include "absl/time/time.h"
#include "grpcpp/alarm.h"
#include "grpcpp/server_context.h"
#include "grpcpp/support/status.h"

namespace perfcast::server {

class CallTimer {
 public:
  // `context` must outlive the timer. `max_call` <= 0 or infinite: no cap
  // (the client's deadline still applies).
  CallTimer(grpc::ServerContextBase& context, absl::Duration max_call);
  ~CallTimer();
  CallTimer(const CallTimer&) = delete;
  CallTimer& operator=(const CallTimer&) = delete;

  // OK while the call may go on. DEADLINE_EXCEEDED once the server's cap or
  // the client's deadline has passed (the message says which), CANCELLED
  // when the client cancelled or went away.
  grpc::Status Check() const;

 private:
  struct Shared;  // what the alarm's callback may still touch after we are gone

  grpc::ServerContextBase& context_;
  absl::Duration max_call_;
  absl::Time cap_ = absl::InfiniteFuture();
  std::shared_ptr<Shared> shared_;
  std::unique_ptr<grpc::Alarm> alarm_;
};

// Cancels a streaming call whose client has sent nothing for `idle`: an
// Import stream holds the store's write lock from its first message to its
// end, so one client that opens a stream and goes quiet would otherwise block
// every other writer (imports, registrations, fits) until the call's cap.
// The handler calls Touch() after each message it reads; when the watchdog
// has cancelled the call, Fired() says so and the handler reports why.
class IdleWatchdog {
 public:
  // `context` must outlive the watchdog. `idle` <= 0 or infinite: never fires.
  IdleWatchdog(grpc::ServerContextBase& context, absl::Duration idle);
  ~IdleWatchdog();
  IdleWatchdog(const IdleWatchdog&) = delete;
  IdleWatchdog& operator=(const IdleWatchdog&) = delete;

  // A message arrived: the idle period starts again.
  void Touch();
  // True once the watchdog has cancelled the call.
  bool Fired() const;
  absl::Duration idle() const { return idle_; }

 private:
  struct Shared;

  absl::Duration idle_;
  std::shared_ptr<Shared> shared_;
  std::unique_ptr<grpc::Alarm> alarm_;
};

}  // namespace perfcast::server

#endif  // PERFCAST_SERVER_CALL_TIMER_H_
