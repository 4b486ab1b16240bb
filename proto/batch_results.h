// PredictBatch's two result layouts, read the same way.
//
// A PredictBatchResponse carries one PredictResult per query, or (when the
// request asked for `compact`) a CompactResults table: each distinct
// job-independent answer once per message, and per query an index into those
// answers plus its job numbers in packed columns. Readers go through
// ValidateBatchResponse once and then BatchResult per query, whichever layout
// the server sent; perfcastd writes the table with CompactResultsBuilder.
//
// Example:
//   RETURN_IF_ERROR(ValidateBatchResponse(response));
//   v1::PredictResult result;
//   for (int i = 0; i < BatchResultCount(response); ++i) {
//     BatchResult(response, i, &result);
//     ...
//   }
//
// Thread-safe: functions over values; a builder is used by one thread.
#ifndef PERFCAST_PROTO_BATCH_RESULTS_H_
#define PERFCAST_PROTO_BATCH_RESULTS_H_

#include <cstdint>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "perfcast/v1/predictor.pb.h"

namespace perfcast::proto {

// The number of query results `response` carries (either layout).
int BatchResultCount(const v1::PredictBatchResponse& response);

// Checks that a compact table is consistent: every per-query column as long
// as `answer`, answer indices in range or -1, and exactly the -1 queries
// listed in `failed` (ascending) with a code each and an error each.
// DataLoss otherwise. A response without a table is always consistent.
absl::Status ValidateBatchResponse(const v1::PredictBatchResponse& response);

// Query `i`'s result (0 <= i < BatchResultCount(response)) as a
// PredictResult: the same message, field for field, as the per-query layout
// would have carried. `response` must have passed ValidateBatchResponse.
void BatchResult(const v1::PredictBatchResponse& response, int i, v1::PredictResult* out);

// Appends a CompactResults table, one query at a time, in query order.
class CompactResultsBuilder {
 public:
  // `rows`: the queries expected (columns are reserved for them).
  CompactResultsBuilder(v1::CompactResults* out, int rows);
  CompactResultsBuilder(const CompactResultsBuilder&) = delete;
  CompactResultsBuilder& operator=(const CompactResultsBuilder&) = delete;

  // An answered query: `shared` identifies its job-independent part
  // `answer` (every field but the job's), which the table holds once per
  // distinct `shared`; the object `shared` points to must outlive the
  // builder, so that no other part takes its address. True when `shared`
  // was new to the table.
  bool AddAnswered(const void* shared, const v1::PredictResponse& answer, int64_t iterations,
                   double job_seconds, double job_seconds_low, double job_seconds_high);
  // A failed query, with its google.rpc.Code and message.
  void AddFailed(int code, absl::string_view error);

 private:
  v1::CompactResults& out_;
  absl::flat_hash_map<const void*, int> index_;
};

}  // namespace perfcast::proto

#endif  // PERFCAST_PROTO_BATCH_RESULTS_H_
