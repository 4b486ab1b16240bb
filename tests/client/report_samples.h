// Realistic evaluation and recommendation responses for the report tests:
// the shapes perfcastd returns, with known numbers, no server needed.
#ifndef PERFCAST_TESTS_CLIENT_REPORT_SAMPLES_H_
#define PERFCAST_TESTS_CLIENT_REPORT_SAMPLES_H_

#include "perfcast/v1/predictor.pb.h"

namespace perfcast::client {

v1::EvaluateResponse SampleEvaluation();
// The train/test GPU protocol: fitted on the H100 and an A100, the H200's
// points predicted (both levels with bands, phases and operation classes),
// per-level bias and coverage set.
v1::EvaluateResponse SampleTransferEvaluation();
v1::RecommendResponse SampleRecommendation();

}  // namespace perfcast::client

#endif  // PERFCAST_TESTS_CLIENT_REPORT_SAMPLES_H_
