// memory_bench: the memory-fit model against measured peaks, on rows its
// calibration never saw. For each model family, its largest size (most
// parameters) is held out in every phase and precision; the calibrations are
// fitted on everything else (predictor::FitMemory) and the held-out peaks are
// predicted (predictor::EstimateMemory). Then, as a second split, each family
// is held out whole (its own calibration cannot exist: the pooled one or the
// analytic terms answer). Third, five folds over workloads (a workload's
// runs in both files stay on one side): the calibration's own
// cross-validation, over every family at once. Prints MAPE, signed bias
// (median), the worst row and the 10-90% band's coverage per family, and
// overall.
//
//   memory_bench FILE...     (agent SQLite files, CSV or JSONL exports)
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "models/descriptor.h"
#include "predictor/dataset.h"
#include "predictor/folds.h"
#include "predictor/memory.h"
#include "tests/bench/profile_loading.h"

namespace pp = perfcast::predictor;
namespace pm = perfcast::models;

namespace {

struct Point {
  std::string family;
  std::string key;
  double measured = 0;
  double predicted = 0;
  double low = 0;
  double high = 0;
  std::string method;
};

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t h = v.size() / 2;
  return v.size() % 2 == 1 ? v[h] : (v[h - 1] + v[h]) / 2;
}

void PrintSummary(const char* title, const std::vector<Point>& points) {
  std::map<std::string, std::vector<const Point*>> by_family;
  for (const Point& p : points) by_family[p.family].push_back(&p);
  by_family["all"];
  for (const Point& p : points) by_family["all"].push_back(&p);
  std::printf("%s\n  %-16s %5s %8s %8s %9s %9s\n", title, "family", "rows", "MAPE", "bias",
              "worst", "coverage");
  for (const auto& [family, rows] : by_family) {
    std::vector<double> abs_errors, errors;
    int covered = 0;
    for (const Point* p : rows) {
      const double e = (p->predicted - p->measured) / p->measured;
      errors.push_back(e);
      abs_errors.push_back(std::abs(e));
      if (p->measured >= p->low && p->measured <= p->high) ++covered;
    }
    double mean = 0;
    for (double a : abs_errors) mean += a / abs_errors.size();
    const double worst = abs_errors.empty() ? 0 : *std::max_element(abs_errors.begin(), abs_errors.end());
    std::printf("  %-16s %5zu %7.1f%% %+7.1f%% %8.1f%% %8.1f%%\n", family.c_str(), rows.size(),
                100 * mean, 100 * Median(errors), 100 * worst,
                rows.empty() ? 0.0 : 100.0 * covered / rows.size());
  }
  std::printf("  worst row of each family:\n");
  for (const auto& [family, rows] : by_family) {
    if (family == "all" || rows.empty()) continue;
    const Point& p = **std::max_element(rows.begin(), rows.end(), [](const Point* a, const Point* b) {
      return std::abs(a->predicted / a->measured - 1) < std::abs(b->predicted / b->measured - 1);
    });
    std::printf("    %+6.1f%%  measured %.3f GiB, predicted %.3f GiB (%s)  %s\n",
                100 * (p.predicted / p.measured - 1), p.measured / (1 << 30),
                p.predicted / (1 << 30), p.method.c_str(), p.key.c_str());
  }
}

// Predicts `test` with a calibration fitted on `train`.
void Predict(const std::vector<pp::DescribedProfile>& train,
             const std::vector<pp::DescribedProfile>& test, std::vector<Point>& out) {
  const pp::MemoryModel model = pp::FitMemory(train);
  for (const pp::DescribedProfile& p : test) {
    const pp::MemoryEstimate e = pp::EstimateMemory(model, p.descriptor);
    out.push_back({p.profile.workload.family, p.profile.workload.Key(),
                   *p.profile.peak_memory_bytes, e.peak_bytes, e.low_bytes, e.high_bytes,
                   e.method});
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: memory_bench FILE...\n");
    return 2;
  }
  std::vector<pp::DescribedProfile> profiles;
  const std::vector<std::string> files(argv + 1, argv + argc);
  absl::Status loaded = perfcast::bench::LoadDescribedProfiles(
      files, /*nodes=*/nullptr, profiles, [](const pm::Profile& profile) {
        return profile.workload.kind == pm::WorkloadKind::kModel &&
               profile.peak_memory_bytes.value_or(0) > 0;
      });
  if (!loaded.ok()) return std::fprintf(stderr, "%s\n", loaded.ToString().c_str()), 1;
  std::printf("%zu model profiles with a measured peak\n", profiles.size());

  // Split 1: each family's largest size held out.
  std::map<std::string, double> largest;
  for (const pp::DescribedProfile& p : profiles) {
    double& l = largest[p.profile.workload.family];
    l = std::max(l, p.descriptor.parameters);
  }
  std::vector<pp::DescribedProfile> train, test;
  for (const pp::DescribedProfile& p : profiles) {
    const bool held_out = p.descriptor.parameters == largest[p.profile.workload.family];
    (held_out ? test : train).push_back(p);
  }
  std::vector<Point> sizes;
  Predict(train, test, sizes);
  PrintSummary("largest size of each family held out (calibrated on the smaller sizes):", sizes);

  // Split 2: each family held out whole.
  std::set<std::string> families;
  for (const pp::DescribedProfile& p : profiles) families.insert(p.profile.workload.family);
  std::vector<Point> unseen;
  for (const std::string& family : families) {
    train.clear();
    test.clear();
    for (const pp::DescribedProfile& p : profiles) {
      (p.profile.workload.family == family ? test : train).push_back(p);
    }
    Predict(train, test, unseen);
  }
  PrintSummary("each family held out whole (pooled calibration or analytic terms):", unseen);

  // Split 3: five folds over workloads.
  std::map<std::string, int> workload_index;
  for (const pp::DescribedProfile& p : profiles) {
    workload_index.try_emplace(p.profile.workload.Key(), static_cast<int>(workload_index.size()));
  }
  constexpr int kFolds = 5;
  absl::StatusOr<std::vector<int>> fold_of_workload =
      pp::RandomFolds(static_cast<int64_t>(workload_index.size()), kFolds, 1);
  if (!fold_of_workload.ok()) {
    return std::fprintf(stderr, "%s\n", fold_of_workload.status().ToString().c_str()), 1;
  }
  std::vector<Point> folds;
  for (int fold = 0; fold < kFolds; ++fold) {
    train.clear();
    test.clear();
    for (const pp::DescribedProfile& p : profiles) {
      const bool held_out =
          (*fold_of_workload)[workload_index.at(p.profile.workload.Key())] == fold;
      (held_out ? test : train).push_back(p);
    }
    Predict(train, test, folds);
  }
  PrintSummary("five folds over workloads (every family calibrated on its other workloads):",
               folds);
  return 0;
}
