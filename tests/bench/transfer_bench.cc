// transfer_bench: the train-GPU / test-GPU protocol (or, without --train and
// --test, leave-one-GPU-out) straight on profile files, without a server:
// fits on the training GPUs' rows, predicts the test GPUs' rows, prints MAPE,
// signed bias and 10-90% interval coverage per test GPU, per operation class
// and per phase, and the fitted models.
//
//   transfer_bench [--train GPU,GPU,... --test GPU,GPU,...] [--group-by gpu]
//                  [--level1-loss squared|absolute] [--level2-loss squared|absolute]
//                  [--points OUT.csv] FILE...
//
// --points writes every test point (gpu, level, class, family, phase,
// measured, predicted, lo, hi, and the workload's parameters as key=value;...)
// for data/tools/neusight_compare.py and per-shape error analysis.
//
// data/tools/neusight_protocol.sh runs it on NeuSight's public measurements.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "models/descriptor.h"
#include "models/gpu_catalog.h"
#include "predictor/evaluate.h"
#include "tests/bench/profile_loading.h"

namespace pp = perfcast::predictor;
namespace pm = perfcast::models;

namespace {

void PrintGroup(const char* title, const std::map<std::string, pp::ErrorSummary>& groups) {
  for (const auto& [name, s] : groups) {
    std::printf("  %-10s %-22s rows %5lld  MAPE %6.1f%%  bias %+6.1f%%  coverage %5.1f%%\n", title,
                name.c_str(), static_cast<long long>(s.count), 100 * s.mape, 100 * s.bias,
                100 * s.coverage);
  }
}

void PrintLevel(const char* title, const pp::LevelReport& level) {
  if (level.overall.count == 0) return;
  std::printf("%s: rows %lld  MAPE %.1f%%  bias %+.1f%%  coverage %.1f%%\n", title,
              static_cast<long long>(level.overall.count), 100 * level.overall.mape,
              100 * level.overall.bias, 100 * level.overall.coverage);
  PrintGroup("gpu", level.by_gpu);
  PrintGroup("class", level.by_class);
  PrintGroup("family", level.by_family);
  PrintGroup("phase", level.by_phase);
  PrintGroup("precision", level.by_precision);
}

void PrintModel(const pp::FittedModel& m) {
  const std::vector<double> raw = m.fit.RawCoefficients();
  std::string terms = absl::StrFormat("%.4g", m.fit.RawIntercept());
  for (size_t j = 0; j < m.features.size(); ++j) {
    terms += absl::StrFormat(" + %.4g*%s", raw[j], m.features[j]);
  }
  std::printf("  level%d/%-12s%s rows %lld  cv MAPE %.1f%%  ms = %s\n", m.level, m.scope.c_str(),
              m.reduced ? " (reduced)" : "", static_cast<long long>(m.training_rows),
              100 * m.cv_mape, terms.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  pp::EvaluateOptions options;
  options.split = pp::Split::kTrainTestGpus;
  std::vector<std::string> files;
  std::string points_file;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if ((arg == "--train" || arg == "--test" || arg == "--group-by" || arg == "--points" ||
         arg == "--level1-loss" || arg == "--level2-loss") &&
        i + 1 < argc) {
      const std::string value = argv[++i];
      if (arg == "--level1-loss" || arg == "--level2-loss") {
        absl::StatusOr<pp::Loss> loss = pp::ParseLoss(value);
        if (!loss.ok()) return std::fprintf(stderr, "%s\n", loss.status().ToString().c_str()), 2;
        (arg == "--level1-loss" ? options.fit.level1_loss : options.fit.level2_loss) = *loss;
        continue;
      }
      if (arg == "--points") {
        points_file = value;
        continue;
      }
      if (arg == "--group-by") {
        options.fit.group_by = value == "gpu" ? pp::GroupBy::kGpu : pp::GroupBy::kNone;
        continue;
      }
      std::vector<std::string>& list = arg == "--train" ? options.train_gpus : options.test_gpus;
      for (absl::string_view gpu : absl::StrSplit(value, ',', absl::SkipEmpty())) {
        list.emplace_back(gpu);
      }
    } else {
      files.push_back(arg);
    }
  }
  if (files.empty() || options.train_gpus.empty() != options.test_gpus.empty()) {
    std::fprintf(stderr, "usage: transfer_bench [--train GPU,... --test GPU,...] FILE...\n");
    return 2;
  }
  // Without a train/test split: leave one GPU out at a time.
  if (options.train_gpus.empty()) options.split = pp::Split::kLeaveOneGpuOut;
  std::map<std::string, pm::Node> nodes;
  std::vector<pp::DescribedProfile> profiles;
  if (absl::Status s = perfcast::bench::LoadDescribedProfiles(files, &nodes, profiles); !s.ok()) {
    return std::fprintf(stderr, "%s\n", s.ToString().c_str()), 1;
  }
  absl::StatusOr<pp::EvaluationReport> report = pp::EvaluateDescribed(profiles, nodes, options);
  if (!report.ok()) return std::fprintf(stderr, "%s\n", report.status().ToString().c_str()), 1;
  std::printf("%zu profiles; fitted on the training GPUs:\n", profiles.size());
  for (const auto& [op_class, m] : report->fitted.level1) PrintModel(m);
  for (const auto& [phase, m] : report->fitted.level2) PrintModel(m);
  for (const auto& [node, rates] : report->fitted.profile_rates) {
    std::printf("  rates read off %s:", node.c_str());
    for (const auto& [key, value] : rates) std::printf(" %s %.4g", key.c_str(), value);
    std::printf("\n");
  }
  for (const auto& [key, value] : report->fitted.efficiencies.global) {
    std::printf("  global efficiency %s %.3f\n", key.c_str(), value);
  }
  PrintLevel("operations (level 1) on the test GPUs", report->level1);
  // Per test GPU and operation class: the protocol's headline figures.
  std::map<std::string, pp::EvaluationReport> by_class;
  for (const pp::EvaluatedPoint& point : report->points) {
    if (point.level != 1) continue;
    pp::EvaluatedPoint copy = point;
    by_class[point.op_class].level1.by_gpu[point.gpu];  // keeps the map ordered by class
    const double e = (point.predicted_ms - point.measured_ms) / point.measured_ms;
    pp::ErrorSummary& s = by_class[point.op_class].level1.by_gpu[point.gpu];
    ++s.count;
    s.mape += (std::abs(e) - s.mape) / s.count;
    s.bias += (e - s.bias) / s.count;
    s.coverage += ((point.lo_ms <= point.measured_ms && point.measured_ms <= point.hi_ms ? 1.0 : 0.0) -
                   s.coverage) / s.count;
  }
  for (const auto& [op_class, r] : by_class) PrintGroup(op_class.c_str(), r.level1.by_gpu);
  PrintLevel("whole models (level 2) on the test GPUs", report->level2);
  for (const std::string& note : report->notes) std::printf("  note: %s\n", note.c_str());
  if (!points_file.empty()) {
    std::FILE* out = std::fopen(points_file.c_str(), "w");
    if (out == nullptr) return std::fprintf(stderr, "cannot write %s\n", points_file.c_str()), 1;
    std::fprintf(out, "gpu,level,op_class,family,phase,batch_size,measured_ms,predicted_ms,lo_ms,hi_ms,params\n");
    for (const pp::EvaluatedPoint& p : report->points) {
      const pm::WorkloadSpec& workload = profiles[p.profile_index].profile.workload;
      std::fprintf(out, "%s,%d,%s,%s,%s,%lld,%.17g,%.17g,%.17g,%.17g,%s\n", p.gpu.c_str(), p.level,
                   p.op_class.c_str(), p.family.c_str(), p.phase.c_str(),
                   static_cast<long long>(workload.batch_size), p.measured_ms, p.predicted_ms,
                   p.lo_ms, p.hi_ms, absl::StrJoin(workload.params, ";", absl::PairFormatter("=")).c_str());
    }
    std::fclose(out);
  }
  return 0;
}
