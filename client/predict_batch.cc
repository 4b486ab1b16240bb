#include "client/predict_batch.h"

#include <string>
#include <utility>

#include "absl/status/status.h"
#include "proto/batch_results.h"

namespace perfcast::client {

std::optional<CliError> PredictBatch(v1::Predictor::StubInterface& stub, grpc::ClientContext& call,
                                     v1::PredictBatchRequest request,
                                     std::vector<v1::PredictResult>& results) {
  auto stream = stub.PredictBatch(&call);
  request.set_compact(true);
  stream->Write(request);
  stream->WritesDone();
  v1::PredictBatchResponse response;
  absl::Status readable = absl::OkStatus();
  while (stream->Read(&response)) {
    if (readable = proto::ValidateBatchResponse(response); !readable.ok()) break;
    for (int i = 0; i < proto::BatchResultCount(response); ++i) {
      proto::BatchResult(response, i, &results.emplace_back());
    }
  }
  if (!readable.ok()) call.TryCancel();
  grpc::Status status = stream->Finish();
  if (!readable.ok()) return CliError{kExitFailure, std::string(readable.message())};
  if (!status.ok()) return CallFailed(status);
  return std::nullopt;
}

}  // namespace perfcast::client
