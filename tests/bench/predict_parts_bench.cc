// What each part of a typical Predict answer costs in process, hot in the
// caches (a loaded server pays several times more per part; predict_bench
// measures the whole call): parsing the request, pricing it on the pricing
// plan, and encoding the answer as a message and serialising it (the
// message path) against writing its bytes (AppendPredictResponse), with the
// answer's bytes by part.
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
#include "predictor/pricing_plan.h"
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
  perfcast::serving::Pricer pricer(store, perfcast::models::GpuCatalog::BuiltIn(), {});
  auto model = pricer.Model("");
  if (!model.ok()) return std::fprintf(stderr, "%s\n", model.status().ToString().c_str()), 1;

  constexpr int kQueries = 24;
  std::vector<std::string> wire;
  std::vector<perfcast::serving::Target> targets;
  std::vector<std::shared_ptr<const perfcast::models::WorkloadDescriptor>> descriptors;
  std::vector<std::string> echoes;
  std::vector<perfcast::predictor::JobSize> jobs;
  std::vector<perfcast::serving::PlannedPrice> prices;
  std::vector<perfcast::predictor::JobEstimate> estimates;
  // What perfcastd keeps per distinct workload and resolves per query.
  std::vector<perfcast::predictor::PreparedWorkload> prepared;
  std::vector<std::shared_ptr<const perfcast::models::Node>> nodes;
  prepared.reserve(kQueries);
  for (int q = 0; q < kQueries; ++q) {
    const v1::PredictRequest request = PredictQuery(q);
    wire.push_back(request.SerializeAsString());
    targets.push_back(*perfcast::server::TargetFromRequest(request));
    auto described = perfcast::server::DescribeWorkload(request);
    if (!described.ok()) return std::fprintf(stderr, "%s\n", described.status().ToString().c_str()), 1;
    descriptors.push_back(
        std::make_shared<const perfcast::models::WorkloadDescriptor>(*std::move(described)));
    echoes.push_back(perfcast::server::EncodeWorkloadEcho(descriptors.back()->spec));
    jobs.push_back(*perfcast::server::JobFromRequest(request));
    auto price = pricer.PricePlanned(*model, descriptors.back(), targets.back());
    if (!price.ok()) return std::fprintf(stderr, "%s\n", price.status().ToString().c_str()), 1;
    estimates.push_back(*perfcast::serving::PriceJob(*price, jobs.back()));
    prices.push_back(*std::move(price));
    prepared.emplace_back(*descriptors.back());
    auto node = pricer.ResolveTarget(targets.back());
    if (!node.ok()) return std::fprintf(stderr, "%s\n", node.status().ToString().c_str()), 1;
    nodes.push_back(*std::move(node));
  }

  // The answer's bytes by part, for the first query.
  v1::PredictResponse answer;
  perfcast::server::EncodeAnswer(prices[0].ToWorkloadPrice(), /*brief=*/false, &answer);
  perfcast::server::EncodeJob(estimates[0], &answer);
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
  std::printf("  %-34s %7.2f\n", "price (PricePlanned + PriceJob)", Time(n, [&](int i) {
                auto price = pricer.PricePlanned(*model, descriptors[i % kQueries],
                                                 targets[i % kQueries]);
                if (!price.ok() || !perfcast::serving::PriceJob(*price, jobs[i % kQueries]).ok()) {
                  std::abort();
                }
              }));
  std::printf("  %-34s %7.2f\n", "price prepared (perfcastd's path)", Time(n, [&](int i) {
                const int q = i % kQueries;
                auto price = pricer.PricePlanned(*model, descriptors[q], nodes[q], prepared[q]);
                if (!price.ok() || !perfcast::serving::PriceJob(*price, jobs[q]).ok()) {
                  std::abort();
                }
              }));
  std::printf("  %-34s %7.2f\n", "price as a Prediction (Price)", Time(n, [&](int i) {
                if (!pricer.Price(*model, descriptors[i % kQueries], targets[i % kQueries]).ok()) {
                  std::abort();
                }
              }));
  std::string bytes;
  std::printf("  %-34s %7.2f\n", "message: encode + serialise", Time(n, [&](int i) {
                google::protobuf::Arena arena;
                auto* r = google::protobuf::Arena::CreateMessage<v1::PredictResponse>(&arena);
                perfcast::server::EncodeAnswer(prices[i % kQueries].ToWorkloadPrice(),
                                               /*brief=*/false, r);
                perfcast::server::EncodeJob(estimates[i % kQueries], r);
                bytes.clear();
                r->AppendToString(&bytes);
              }));
  std::printf("  %-34s %7.2f\n", "bytes: AppendPredictResponse", Time(n, [&](int i) {
                bytes.clear();
                perfcast::server::AppendPredictResponse(prices[i % kQueries], echoes[i % kQueries],
                                                        estimates[i % kQueries], &bytes);
              }));
  prices.clear();
  model = absl::NotFoundError("");
  opened->store.reset();
  std::filesystem::remove_all(dir);
  return 0;
}
