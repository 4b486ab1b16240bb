// A Predict answer from a price, two ways: the PredictResponse message
// (EncodeAnswer, EncodeJob: PredictBatch's results, the answer cache, layouts)
// and, for a one-GPU answer, the same message's wire bytes written straight
// from a serving::PlannedPrice (AppendPredictResponse), which unary Predict
// sends without building a message.
//
// Why both: building ~60 fields, ~30 strings and a map as a message, then
// serialising it, cost Predict about as much CPU as pricing the answer (see
// predict_bench); writing the bytes costs a fraction of that. Protobuf's
// encoding of a message is the concatenation of its fields' encodings, so
// AppendPredictResponse writes, in field-number order as the message's own
// serialisation does, what EncodeAnswer and EncodeJob would set: the
// numbers priced for this call, labels and class keys straight from the
// pricing plan's strings, and the workload echo from bytes encoded once per
// described workload (EncodeWorkloadEcho). Nothing priced is kept between
// calls. predict_response_test holds the two to the same bytes.
//
// Thread-safe: pure functions.
#ifndef PERFCAST_SERVER_PREDICT_RESPONSE_H_
#define PERFCAST_SERVER_PREDICT_RESPONSE_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "models/workload.h"
#include "perfcast/v1/predictor.pb.h"
#include "predictor/job.h"
#include "predictor/memory.h"
#include "predictor/parallel.h"
#include "serving/pricer.h"

namespace perfcast::server {

void EncodeMemory(const predictor::MemoryEstimate& e, const predictor::MemoryVerdict& v,
                  v1::MemoryEstimate* out);
void EncodeParallel(const predictor::ParallelPrediction& p, v1::ParallelEstimate* out);

// Everything of a response that does not depend on the job size; `brief`
// keeps the numbers only (see PredictBatchRequest.brief). From an rvalue,
// the strings of the price's lists move into `out` (a malloc and a copy
// fewer each); from a const price they are copied.
void EncodeAnswer(const serving::WorkloadPrice& price, bool brief, v1::PredictResponse* out);
void EncodeAnswer(serving::WorkloadPrice&& price, bool brief, v1::PredictResponse* out);

// The job's part of a response: iterations and job_seconds with its band.
void EncodeJob(const predictor::JobEstimate& job, v1::PredictResponse* out);

// The bytes of a v1::Workload holding `spec` (proto::ToProto), parameters in
// name order: what AppendPredictResponse writes as the answer's workload.
std::string EncodeWorkloadEcho(const models::WorkloadSpec& spec);

// Appends the wire bytes of the full PredictResponse that
// EncodeAnswer(price.ToWorkloadPrice(), /*brief=*/false) and EncodeJob(job)
// build; `workload_echo` is EncodeWorkloadEcho(price.workload->spec).
void AppendPredictResponse(const serving::PlannedPrice& price, absl::string_view workload_echo,
                           const predictor::JobEstimate& job, std::string* out);

// The job's fields of a response (EncodeJob's) as wire bytes.
void AppendJobFields(const predictor::JobEstimate& job, std::string* out);

// A response's bytes with a gap for the job: an answer priced once (the
// answer cache's) answers any job size as head + AppendJobFields + tail,
// without copying or serialising a message per call. The encoding of a
// message is its fields' in number order and the job's fields (4-7) sit
// between the step's time (1-3) and the rest, so the three pieces are the
// deterministic serialisation of the whole response.
struct AnswerBytes {
  std::string head;  // fields below the job's
  std::string tail;  // fields above them
};
// From `answer`, a response whose job fields are unset (EncodeAnswer's).
AnswerBytes SplitAroundJob(const v1::PredictResponse& answer);
// head + the job's fields + tail.
void AppendAnswer(const AnswerBytes& answer, const predictor::JobEstimate& job, std::string* out);

// Appends `notes` as PredictResponse.notes, the answer's last field: after
// AppendPredictResponse, the bytes of the response with those notes.
void AppendPredictNotes(const std::vector<std::string>& notes, std::string* out);

}  // namespace perfcast::server

#endif  // PERFCAST_SERVER_PREDICT_RESPONSE_H_
