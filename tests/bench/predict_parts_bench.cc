// What each part of a typical Predict answer costs in process, hot in the
// caches (a loaded server pays several times more per part; predict_bench
// measures the whole call): parsing the request, decoding it into a
// serving::Query, asking the Pricer (an answer kept, and priced afresh),
// and encoding the answer and serialising it, with the answer's bytes by
// part.
//
//   predict_parts_bench [--iterations=N]
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "db/store.h"
#include "google/protobuf/arena.h"
#include "models/descriptor.h"
#include "models/gpu_catalog.h"
#include "perfcast/v1/predictor.pb.h"
#include "server/predict_response.h"
#include "server/request_validation.h"
#include "serving/pricer.h"
#include "serving/training.h"
#include "tests/bench/predict_queries.h"
#include "tests/server/synthetic_store.h"

namespace {

namespace v1 = perfcast::v1;
using Clock = std::chrono::steady_clock;

using perfcast::bench::PredictQuery;

// Microseconds per call of `f(i)` over `n` calls.
template <typename F>
double Time(int n, F f) {
  const Clock::time_point start = Clock::now();
  for (int i = 0; i < n; ++i) f(i);
  return std::chrono::duration<double, std::micro>(Clock::now() - start).count() / n;
}

}  // namespace

int main(int argc, char** argv) {
  int n = 100'000;
  for (int i = 1; i < argc; ++i) {
    absl::string_view arg = argv[i];
    if (absl::ConsumePrefix(&arg, "--iterations=") && absl::SimpleAtoi(arg, &n) && n > 0) continue;
    std::fprintf(stderr, "usage: predict_parts_bench [--iterations=N]\n");
    return 2;
  }
  auto opened = perfcast::bench::OpenSyntheticStore("predict_parts_bench");
  if (!opened.ok()) return std::fprintf(stderr, "%s\n", opened.status().ToString().c_str()), 1;
  const std::filesystem::path dir = opened->dir;
  perfcast::db::Store& store = *opened->store;
  perfcast::predictor::ProfileSelection selection;
  selection.exclude_gpu_models = {"beta2-gpu"};
  auto fitted = perfcast::serving::FitAndSave(store, "", selection, {},
                                              [] { return absl::OkStatus(); });
  if (!fitted.ok()) return std::fprintf(stderr, "%s\n", fitted.status().ToString().c_str()), 1;
  perfcast::serving::Pricer kept(store, perfcast::models::GpuCatalog::BuiltIn(), {});
  perfcast::serving::Pricer afresh(store, perfcast::models::GpuCatalog::BuiltIn(),
                                   {.keep_answers = false});

  constexpr int kQueries = 24;
  std::vector<v1::PredictRequest> requests;
  std::vector<std::string> wire;
  std::vector<perfcast::serving::Answer> answers;
  for (int q = 0; q < kQueries; ++q) {
    requests.push_back(PredictQuery(q));
    wire.push_back(requests.back().SerializeAsString());
    auto query = perfcast::server::QueryFromRequest(requests.back());
    if (!query.ok()) return std::fprintf(stderr, "%s\n", query.status().ToString().c_str()), 1;
    auto answer = kept.Ask(*query);
    if (!answer.ok()) return std::fprintf(stderr, "%s\n", answer.status().ToString().c_str()), 1;
    answers.push_back(*std::move(answer));
  }

  // The answer's bytes by part, for the first query.
  v1::PredictResponse answer;
  perfcast::server::EncodeAnswer(answers[0], /*brief=*/false, &answer);
  auto part = [&](const char* name, auto clear) {
    v1::PredictResponse without = answer;
    clear(without);
    std::printf("  %-34s %5zu bytes\n", name, answer.ByteSizeLong() - without.ByteSizeLong());
  };
  std::printf("answer: %zu bytes, %d breakdown entries, %d features, %d extrapolated\n",
              answer.ByteSizeLong(), answer.breakdown_size(), answer.features_size(),
              answer.extrapolated_features_size());
  part("breakdown", [](v1::PredictResponse& r) { r.clear_breakdown(); });
  part("features", [](v1::PredictResponse& r) { r.clear_features(); });
  part("extrapolated_features", [](v1::PredictResponse& r) { r.clear_extrapolated_features(); });
  part("uncalibrated_classes", [](v1::PredictResponse& r) { r.clear_uncalibrated_classes(); });
  part("workload", [](v1::PredictResponse& r) { r.clear_workload(); });
  part("memory", [](v1::PredictResponse& r) { r.clear_memory(); });

  std::printf("\nper call, %d calls over %d queries (us)\n", n, kQueries);
  std::printf("  %-34s %7.2f\n", "parse request (arena)", Time(n, [&](int i) {
                google::protobuf::Arena arena;
                google::protobuf::Arena::CreateMessage<v1::PredictRequest>(&arena)->ParseFromString(
                    wire[i % kQueries]);
              }));
  std::printf("  %-34s %7.2f\n", "decode (QueryFromRequest)", Time(n, [&](int i) {
                if (!perfcast::server::QueryFromRequest(requests[i % kQueries]).ok()) std::abort();
              }));
  for (auto* pricer : {&kept, &afresh}) {
    std::printf("  %-34s %7.2f\n",
                pricer == &kept ? "Ask, the answer kept" : "Ask, priced afresh",
                Time(n, [&](int i) {
                  auto query = perfcast::server::QueryFromRequest(requests[i % kQueries]);
                  if (!query.ok() || !pricer->Ask(*query).ok()) std::abort();
                }));
  }
  std::string bytes;
  std::printf("  %-34s %7.2f\n", "encode + serialise", Time(n, [&](int i) {
                google::protobuf::Arena arena;
                auto* r = google::protobuf::Arena::CreateMessage<v1::PredictResponse>(&arena);
                perfcast::server::EncodeAnswer(answers[i % kQueries], /*brief=*/false, r);
                bytes.clear();
                r->AppendToString(&bytes);
              }));
  answers.clear();
  opened->store.reset();
  std::filesystem::remove_all(dir);
  return 0;
}
