// recommend's layout search end to end in process (serving::Recommend: every
// valid layout enumerated per GPU type and count, memory checked, the
// fitting ones priced through the Pricer, ranked), on a model fitted to the
// synthetic store. Reports the layouts searched per second and the time of
// one whole search, wall and CPU (the machine may be shared).
//
//   layout_search_bench [--benchmark_*]
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "benchmark/benchmark.h"
#include "db/store.h"
#include "models/descriptor.h"
#include "models/gpu_catalog.h"
#include "predictor/layout_search.h"
#include "serving/pricer.h"
#include "serving/recommender.h"
#include "serving/training.h"
#include "tests/server/synthetic_store.h"

namespace {

using perfcast::models::GpuCatalog;

// Llama-3-8B: 32 heads, 8 key/value heads, 32 layers, 2,048 tokens.
perfcast::models::WorkloadSpec Llama8b(int64_t batch) {
  perfcast::models::WorkloadSpec spec;
  spec.family = "decoder";
  spec.params = {{"hidden", 4096}, {"layers", 32},     {"heads", 32},    {"kv_heads", 8},
                 {"ffn", 14336},   {"vocab", 128256},  {"seq_len", 2048}, {"mlp", 1},
                 {"norm", 1},      {"bias", 0},        {"positions", 0}, {"tied", 0}};
  spec.batch_size = batch;
  spec.precision = perfcast::models::Precision::kBf16Amp;
  spec.optimizer = "adamw";
  return spec;
}

struct Setup {
  std::unique_ptr<perfcast::db::Store> store;
  std::unique_ptr<perfcast::serving::Pricer> pricer;
  perfcast::serving::RecommendQuery query;
  int64_t layouts_per_gpu = 0;  // enumerated per GPU type
};

Setup* TheSetup() {
  static Setup* setup = [] {
    auto* s = new Setup;
    const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                      ("layout_search_bench_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    auto opened = perfcast::db::OpenStore((dir / "bench.db").string());
    absl::Status filled =
        opened.ok() ? perfcast::testing::FillSyntheticStore(
                          **opened, perfcast::testing::SyntheticNodes(), {"beta2"})
                    : opened.status();
    if (!filled.ok()) {
      std::fprintf(stderr, "%s\n", filled.ToString().c_str());
      std::exit(1);
    }
    s->store = *std::move(opened);
    auto fitted = perfcast::serving::FitAndSave(*s->store, "", {}, {},
                                                [] { return absl::OkStatus(); });
    if (!fitted.ok()) {
      std::fprintf(stderr, "%s\n", fitted.status().ToString().c_str());
      std::exit(1);
    }
    s->pricer = std::make_unique<perfcast::serving::Pricer>(*s->store, GpuCatalog::BuiltIn(),
                                                            perfcast::serving::Pricer::Options{});
    s->query.workload = *perfcast::models::Describe(Llama8b(/*batch=*/256));
    s->query.job.iterations = 10'000;
    // Ten GPU types that run bf16.
    for (const perfcast::models::GpuSpec& gpu : GpuCatalog::BuiltIn().gpus()) {
      if (gpu.bf16_tflops > 0 && s->query.catalog_gpus.size() < 10) {
        s->query.catalog_gpus.push_back(gpu.model);
      }
    }
    s->query.catalog_only = true;
    s->query.gpu_counts = *perfcast::predictor::ParseGpuCounts("1-64");
    s->query.rank_by = perfcast::predictor::RankBy::kTime;
    for (int count : s->query.gpu_counts) {
      s->layouts_per_gpu += perfcast::predictor::EnumerateLayouts(
                                s->query.workload.spec, s->query.framework, count, 0)
                                .size();
    }
    return s;
  }();
  return setup;
}

// One recommend: range(0) GPU types × counts 1-64 × every valid layout.
void BM_RecommendLlama8bCounts1To64(benchmark::State& state) {
  Setup& s = *TheSetup();
  perfcast::serving::RecommendQuery query = s.query;
  query.catalog_gpus.resize(state.range(0));
  size_t rows = 0;
  for (auto _ : state) {
    auto answer = perfcast::serving::Recommend(*s.pricer, *s.store, GpuCatalog::BuiltIn(), query);
    if (!answer.ok()) {
      state.SkipWithError(std::string(answer.status().message()).c_str());
      return;
    }
    rows = answer->ranked.size();
    benchmark::DoNotOptimize(answer);
  }
  const double layouts = static_cast<double>(s.layouts_per_gpu * state.range(0));
  state.counters["layouts"] = layouts;
  state.counters["rows"] = static_cast<double>(rows);
  state.counters["layouts_per_s"] =
      benchmark::Counter(layouts, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_RecommendLlama8bCounts1To64)
    ->ArgName("gpu_types")
    ->Arg(1)
    ->Arg(10)
    ->Unit(benchmark::kMillisecond)
    ->MeasureProcessCPUTime()
    ->UseRealTime();

// The enumeration alone (no memory, no pricing).
void BM_EnumerateLayouts(benchmark::State& state) {
  Setup& s = *TheSetup();
  for (auto _ : state) {
    for (int count : s.query.gpu_counts) {
      benchmark::DoNotOptimize(perfcast::predictor::EnumerateLayouts(
          s.query.workload.spec, s.query.framework, count, 0));
    }
  }
}
BENCHMARK(BM_EnumerateLayouts)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
