#include "server/rpc_observer.h"

#include <chrono>
#include <map>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace perfcast::server {
namespace {

using grpc::experimental::InterceptionHookPoints;

constexpr size_t kMaxRequestIdLength = 128;

bool IsHealthCheck(absl::string_view method) {
  return absl::StartsWith(method, "/grpc.health.v1.Health/");
}

LogLevel AccessLogLevel(absl::string_view method, grpc::StatusCode code) {
  if (code == grpc::StatusCode::INTERNAL || code == grpc::StatusCode::UNKNOWN ||
      code == grpc::StatusCode::DATA_LOSS) {
    return LogLevel::kError;
  }
  return IsHealthCheck(method) ? LogLevel::kDebug : LogLevel::kInfo;
}

// One per call; gRPC creates it when the call arrives and destroys it with
// the call's context.
class RpcObserver final : public grpc::experimental::Interceptor {
 public:
  RpcObserver(RpcObserverFactory& factory, grpc::experimental::ServerRpcInfo& info)
      : factory_(factory), info_(info), method_(info.method() != nullptr ? info.method() : "") {}

  ~RpcObserver() override {
    // A call torn down without sending a status (cancelled at shutdown, the
    // client gone) still ended.
    if (started_ && !finished_) {
      Finish(grpc::StatusCode::CANCELLED, "the call ended without a status");
    }
  }

  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::POST_RECV_INITIAL_METADATA)) {
      Start(*methods->GetRecvInitialMetadata());
    }
    if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::POST_RECV_MESSAGE) &&
        OneRequestMessage() && methods->GetRecvMessage() == nullptr) {
      unparsable_request_ = true;
    }
    if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_INITIAL_METADATA)) {
      methods->GetSendInitialMetadata()->emplace(kRequestIdKey, request_id_);
    }
    if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_STATUS)) {
      grpc::Status status = methods->GetSendStatus();
      // gRPC answers a request it cannot parse INTERNAL, a server fault; the
      // fault is the client's.
      if (unparsable_request_ && status.error_code() == grpc::StatusCode::INTERNAL) {
        status = grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                              absl::StrCat("the request is not a valid ", method_,
                                           " message: its bytes do not parse"));
        methods->ModifySendStatus(status);
      }
      Finish(status.error_code(), status.error_message());
    }
    methods->Proceed();
  }

 private:
  // Whether the method takes exactly one request message: then a call
  // without one after its receipt is one whose bytes did not parse (a stream
  // of requests also ends that way).
  bool OneRequestMessage() const {
    using Type = grpc::experimental::ServerRpcInfo::Type;
    return info_.type() == Type::UNARY || info_.type() == Type::SERVER_STREAMING;
  }

  void Start(std::multimap<grpc::string_ref, grpc::string_ref>& client_metadata) {
    started_ = true;
    start_ = std::chrono::steady_clock::now();
    auto [first, last] = client_metadata.equal_range(kRequestIdKey);
    if (first != last) {
      absl::string_view sent(first->second.data(), first->second.size());
      if (IsValidRequestId(sent)) request_id_ = std::string(sent);
    }
    if (request_id_.empty()) request_id_ = factory_.NewRequestId();
    // The map refers to strings it does not own: request_id_ lives as long as
    // this observer, that is, as long as the call's context.
    client_metadata.erase(first, last);
    client_metadata.emplace(grpc::string_ref(kRequestIdKey), grpc::string_ref(request_id_));
    if (factory_.metrics() != nullptr) factory_.metrics()->RpcStarted(method_);
  }

  void Finish(grpc::StatusCode code, const std::string& message) {
    if (!started_ || finished_) return;
    finished_ = true;
    const absl::Duration elapsed = absl::FromChrono(std::chrono::steady_clock::now() - start_);
    const std::string code_name = absl::StatusCodeToString(static_cast<absl::StatusCode>(code));
    if (factory_.metrics() != nullptr) factory_.metrics()->RpcFinished(method_, code_name, elapsed);
    const LogLevel level = AccessLogLevel(method_, code);
    Logger& logger = factory_.logger();
    if (!logger.Enabled(level)) return;
    const std::string duration_ms = absl::StrFormat("%.3f", absl::ToDoubleMilliseconds(elapsed));
    grpc::ServerContextBase* context = info_.server_context();
    const std::string peer = context != nullptr ? context->peer() : "";
    if (code == grpc::StatusCode::OK) {
      logger.Log(level, "rpc",
                 {{"method", method_},
                  {"code", code_name},
                  {"duration_ms", duration_ms},
                  {"peer", peer},
                  {"request_id", request_id_}});
    } else {
      logger.Log(level, "rpc",
                 {{"method", method_},
                  {"code", code_name},
                  {"duration_ms", duration_ms},
                  {"peer", peer},
                  {"request_id", request_id_},
                  {"error", message}});
    }
  }

  RpcObserverFactory& factory_;
  grpc::experimental::ServerRpcInfo& info_;
  const std::string method_;
  std::string request_id_;
  std::chrono::steady_clock::time_point start_;
  bool started_ = false;
  bool finished_ = false;
  bool unparsable_request_ = false;
};

}  // namespace

bool IsValidRequestId(absl::string_view id) {
  if (id.empty() || id.size() > kMaxRequestIdLength) return false;
  for (char c : id) {
    if (c <= ' ' || c > '~') return false;
  }
  return true;
}

std::string RequestIdOf(const grpc::ServerContextBase& context) {
  const auto& metadata = context.client_metadata();
  auto it = metadata.find(kRequestIdKey);
  return it == metadata.end() ? std::string() : std::string(it->second.data(), it->second.size());
}

grpc::experimental::Interceptor* RpcObserverFactory::CreateServerInterceptor(
    grpc::experimental::ServerRpcInfo* info) {
  return new RpcObserver(*this, *info);
}

std::string RpcObserverFactory::NewRequestId() {
  std::lock_guard<std::mutex> lock(random_mutex_);
  return absl::StrFormat("%016x", absl::Uniform<uint64_t>(random_));
}

}  // namespace perfcast::server
