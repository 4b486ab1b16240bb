// A Predict answer as a PredictResponse: serving/'s price and job encoded,
// for Predict and PredictBatch alike.
//
// Thread-safe: pure functions.
#ifndef PERFCAST_SERVER_PREDICT_RESPONSE_H_
#define PERFCAST_SERVER_PREDICT_RESPONSE_H_

#include "perfcast/v1/predictor.pb.h"
#include "predictor/distance.h"
#include "predictor/job.h"
#include "predictor/memory.h"
#include "predictor/parallel.h"
#include "predictor/python_loop.h"
#include "serving/pricer.h"

namespace perfcast::server {

void EncodeMemory(const predictor::MemoryEstimate& e, const predictor::MemoryVerdict& v,
                  v1::MemoryEstimate* out);
void EncodeParallel(const predictor::ParallelPrediction& p, v1::ParallelEstimate* out);
// How far the target is from the training GPUs, as Predict and Recommend say it.
void EncodeDistance(const predictor::Distance& d, v1::Distance* out);
// How the step's loop was priced: `p`'s loop, and what the step dispatches.
void EncodeLoop(const predictor::Prediction& p, const predictor::HostWork& work,
                v1::LoopEstimate* out);

// Everything of a response that does not depend on the job size; `brief`
// keeps the numbers only (see PredictBatchRequest.brief).
void EncodePrice(const serving::Price& price, bool brief, v1::PredictResponse* out);

// The job's part of a response: iterations and job_seconds with its band.
void EncodeJob(const predictor::JobEstimate& job, v1::PredictResponse* out);

// A whole answer: EncodePrice and EncodeJob.
void EncodeAnswer(const serving::Answer& answer, bool brief, v1::PredictResponse* out);

}  // namespace perfcast::server

#endif  // PERFCAST_SERVER_PREDICT_RESPONSE_H_
