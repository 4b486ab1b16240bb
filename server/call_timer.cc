#include "server/call_timer.h"

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"

namespace perfcast::server {

// The alarm fires on a gRPC thread, possibly while the handler is returning;
// the handler clears `context` (under the lock) before the context can go.
struct CallTimer::Shared {
  absl::Mutex mu;
  grpc::ServerContextBase* context ABSL_GUARDED_BY(mu) = nullptr;
};

CallTimer::CallTimer(grpc::ServerContextBase& context, absl::Duration max_call)
    : context_(context), max_call_(max_call) {
  if (max_call <= absl::ZeroDuration() || max_call == absl::InfiniteDuration()) return;
  cap_ = absl::Now() + max_call;
  shared_ = std::make_shared<Shared>();
  {
    absl::MutexLock lock(&shared_->mu);
    shared_->context = &context;
  }
  alarm_ = std::make_unique<grpc::Alarm>();
  // A handler that is working notices the cap at its next Check() and tells
  // the client DEADLINE_EXCEEDED; cancelling the call (which the client sees
  // as CANCELLED) is for handlers that cannot get there, so it comes later.
  constexpr absl::Duration kBackstopDelay = absl::Seconds(1);
  alarm_->Set(absl::ToChronoTime(cap_ + kBackstopDelay), [shared = shared_](bool fired) {
    if (!fired) return;  // cancelled: the handler finished first
    absl::MutexLock lock(&shared->mu);
    if (shared->context != nullptr) shared->context->TryCancel();
  });
}

CallTimer::~CallTimer() {
  if (shared_ != nullptr) {
    absl::MutexLock lock(&shared_->mu);
    shared_->context = nullptr;
  }
  // Destroying the alarm cancels it if it has not fired.
}

grpc::Status CallTimer::Check() const {
  const absl::Time now = absl::Now();
  if (now >= cap_) {
    return grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED,
                        absl::StrCat("the call ran longer than this server allows (",
                                     absl::FormatDuration(max_call_),
                                     ", perfcastd --max_call_seconds)"));
  }
  if (context_.IsCancelled()) {
    if (now >= absl::FromChrono(context_.deadline())) {
      return grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED, "the client's deadline passed");
    }
    return grpc::Status(grpc::StatusCode::CANCELLED, "the client cancelled the call");
  }
  return grpc::Status::OK;
}

struct IdleWatchdog::Shared {
  absl::Mutex mu;
  grpc::ServerContextBase* context ABSL_GUARDED_BY(mu) = nullptr;
  bool fired ABSL_GUARDED_BY(mu) = false;
};

IdleWatchdog::IdleWatchdog(grpc::ServerContextBase& context, absl::Duration idle) : idle_(idle) {
  if (idle <= absl::ZeroDuration() || idle == absl::InfiniteDuration()) return;
  shared_ = std::make_shared<Shared>();
  {
    absl::MutexLock lock(&shared_->mu);
    shared_->context = &context;
  }
  Touch();
}

IdleWatchdog::~IdleWatchdog() {
  if (shared_ == nullptr) return;
  absl::MutexLock lock(&shared_->mu);
  shared_->context = nullptr;
}

void IdleWatchdog::Touch() {
  if (shared_ == nullptr) return;
  // A fresh alarm per message: destroying the old one cancels it (its
  // callback then runs with fired == false), and re-arming a grpc::Alarm
  // whose cancellation is still in flight is not allowed.
  alarm_ = std::make_unique<grpc::Alarm>();
  alarm_->Set(absl::ToChronoTime(absl::Now() + idle_), [shared = shared_](bool fired) {
    if (!fired) return;
    absl::MutexLock lock(&shared->mu);
    if (shared->context == nullptr) return;
    shared->fired = true;
    shared->context->TryCancel();
  });
}

bool IdleWatchdog::Fired() const {
  if (shared_ == nullptr) return false;
  absl::MutexLock lock(&shared_->mu);
  return shared_->fired;
}

}  // namespace perfcast::server
