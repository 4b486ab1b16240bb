#include "client/request_id.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace perfcast::client {
namespace {

using grpc::experimental::InterceptionHookPoints;

constexpr char kRequestIdKey[] = "x-request-id";

class RequestIdInterceptor final : public grpc::experimental::Interceptor {
 public:
  explicit RequestIdInterceptor(std::string request_id) : request_id_(std::move(request_id)) {}

  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_INITIAL_METADATA)) {
      std::multimap<std::string, std::string>* metadata = methods->GetSendInitialMetadata();
      // A caller that set its own id keeps it.
      if (auto it = metadata->find(kRequestIdKey); it != metadata->end()) {
        request_id_ = it->second;
      } else {
        metadata->emplace(kRequestIdKey, request_id_);
      }
    }
    if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::POST_RECV_STATUS)) {
      grpc::Status* status = methods->GetRecvStatus();
      if (!status->ok()) {
        *status =
            grpc::Status(status->error_code(),
                         absl::StrCat(status->error_message(), " (request id ", request_id_, ")"),
                         status->error_details());
      }
    }
    methods->Proceed();
  }

 private:
  std::string request_id_;
};

}  // namespace

grpc::experimental::Interceptor* RequestIdInterceptorFactory::CreateClientInterceptor(
    grpc::experimental::ClientRpcInfo* info) {
  return new RequestIdInterceptor(NewRequestId());
}

std::string RequestIdInterceptorFactory::NewRequestId() {
  std::lock_guard<std::mutex> lock(random_mutex_);
  return absl::StrFormat("%016x", absl::Uniform<uint64_t>(random_));
}

}  // namespace perfcast::client
