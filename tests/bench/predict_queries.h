// The Predict questions the serving benchmarks ask, and the store they ask
// them of: distinct workloads, targets and job sizes over the synthetic
// store's nodes (tests/server/synthetic_store.h), so that no answer repeats
// by accident.
#ifndef PERFCAST_TESTS_BENCH_PREDICT_QUERIES_H_
#define PERFCAST_TESTS_BENCH_PREDICT_QUERIES_H_

#include <filesystem>
#include <memory>
#include <string>
#include <utility>

#include <unistd.h>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "db/store.h"
#include "perfcast/v1/predictor.pb.h"
#include "tests/server/synthetic_store.h"

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

// A store in a new temporary directory named after `bench` and this
// process, filled with the synthetic nodes' profiles (beta2's too, which
// the benchmarks hold out of their fits): what they ask PredictQuery on.
// The caller removes `dir` when done.
struct SyntheticStore {
  std::filesystem::path dir;
  std::unique_ptr<db::Store> store;
};

inline absl::StatusOr<SyntheticStore> OpenSyntheticStore(const std::string& bench) {
  SyntheticStore opened;
  opened.dir = std::filesystem::temp_directory_path() / absl::StrCat(bench, "_", ::getpid());
  std::filesystem::create_directories(opened.dir);
  ASSIGN_OR_RETURN(std::unique_ptr<db::Store> store,
                   db::OpenStore((opened.dir / "bench.db").string()));
  opened.store = std::move(store);
  if (absl::Status s =
          testing::FillSyntheticStore(*opened.store, testing::SyntheticNodes(), {"beta2"});
      !s.ok()) {
    return s;
  }
  return opened;
}

}  // namespace perfcast::bench

#endif  // PERFCAST_TESTS_BENCH_PREDICT_QUERIES_H_
