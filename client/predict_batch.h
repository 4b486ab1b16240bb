// One PredictBatch call as `predict --batch-file` and `predict --sweep` make
// it: the queries sent in one request, every result read back in order.
#ifndef PERFCAST_CLIENT_PREDICT_BATCH_H_
#define PERFCAST_CLIENT_PREDICT_BATCH_H_

#include <optional>
#include <vector>

#include "client/cli_error.h"
#include "grpcpp/client_context.h"
#include "perfcast/v1/predictor.grpc.pb.h"

namespace perfcast::client {

// Sends `request` in the compact layout (each distinct answer once,
// proto/batch_results.h) on `call`, which carries the caller's deadline if
// any, and appends every query's result to `results` in query order. A
// CliError (kExitFailure) when the call fails (the server's status), or when
// a response is inconsistent (its DataLoss message; the call is cancelled).
std::optional<CliError> PredictBatch(v1::Predictor::StubInterface& stub, grpc::ClientContext& call,
                                     v1::PredictBatchRequest request,
                                     std::vector<v1::PredictResult>& results);

}  // namespace perfcast::client

#endif  // PERFCAST_CLIENT_PREDICT_BATCH_H_
