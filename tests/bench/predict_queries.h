// The Predict questions the serving benchmarks ask: distinct workloads,
// targets and job sizes over the synthetic store's nodes
// (tests/server/synthetic_store.h), so that no answer repeats by accident.
#ifndef PERFCAST_TESTS_BENCH_PREDICT_QUERIES_H_
#define PERFCAST_TESTS_BENCH_PREDICT_QUERIES_H_

#include "perfcast/v1/predictor.pb.h"

namespace perfcast::bench {

// LSTMs of 1-4 layers and hidden 128-512 at batch 64 in bf16, on nodes
// "beta2" and "alpha1" in turn, each with its own job size: 24 workloads x 2
// nodes before a question repeats its workload and target.
inline v1::PredictRequest PredictQuery(int variant) {
  v1::PredictRequest request;
  v1::Workload* w = request.mutable_workload();
  w->set_family("lstm");
  (*w->mutable_params())["layers"] = 1 + variant % 4;
  (*w->mutable_params())["hidden"] = 128 << (variant / 4 % 3);
  w->set_batch_size(64);
  w->set_precision(v1::PRECISION_BF16_AMP);
  request.set_node_name(variant % 2 == 0 ? "beta2" : "alpha1");
  request.mutable_job()->set_samples(1'000'000 + variant);
  request.mutable_job()->set_epochs(1 + variant % 30);
  return request;
}

}  // namespace perfcast::bench

#endif  // PERFCAST_TESTS_BENCH_PREDICT_QUERIES_H_
