// e2e_breakdown: where a train-GPU / test-GPU protocol's end-to-end error
// comes from. Fits on the training GPUs' rows (as transfer_bench), then for
// every whole-model row of every GPU prints the measured time, the level-1
// sum, the answer, and the level-1 sum per operation class (unscaled), so
// that level-1 mispricing and level-2 composition can be told apart.
//
//   e2e_breakdown --train GPU,GPU,... --test GPU,GPU,... FILE...
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "predictor/predictor.h"
#include "predictor/pricing_plan.h"
#include "tests/bench/profile_loading.h"

namespace pp = perfcast::predictor;
namespace pm = perfcast::models;

int main(int argc, char** argv) {
  std::vector<std::string> files;
  std::set<std::string> train, test;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if ((arg == "--train" || arg == "--test") && i + 1 < argc) {
      for (absl::string_view gpu : absl::StrSplit(argv[++i], ',', absl::SkipEmpty())) {
        (arg == "--train" ? train : test).emplace(gpu);
      }
    } else {
      files.push_back(arg);
    }
  }
  std::map<std::string, pm::Node> nodes;
  std::vector<pp::DescribedProfile> profiles;
  if (absl::Status s = perfcast::bench::LoadDescribedProfiles(files, &nodes, profiles); !s.ok()) {
    return std::fprintf(stderr, "%s\n", s.ToString().c_str()), 1;
  }
  std::vector<pp::DescribedProfile> fit_rows;
  for (const pp::DescribedProfile& p : profiles) {
    if (train.contains(nodes.at(p.profile.node_name).gpu.model)) fit_rows.push_back(p);
  }
  pp::FitOptions options;
  options.group_by = pp::GroupBy::kGpu;
  absl::StatusOr<pp::PredictorModel> model = pp::FitDescribed(fit_rows, nodes, options);
  if (!model.ok()) return std::fprintf(stderr, "%s\n", model.status().ToString().c_str()), 1;
  for (const auto& [phase, m] : model->level2) {
    std::printf("# level2/%s features:", m.scope.c_str());
    const std::vector<double> raw = m.fit.RawCoefficients();
    std::printf(" %.4g", m.fit.RawIntercept());
    for (size_t j = 0; j < m.features.size(); ++j) {
      std::printf(" + %.4g*%s", raw[j], m.features[j].c_str());
    }
    std::printf("\n");
  }
  std::printf("set,gpu,source,family,phase,batch,measured,level1,predicted,lo,hi,method");
  const char* classes[] = {"gemm", "elementwise", "norm", "softmax", "embedding",
                           "optimizer", "h2d", "host"};
  for (const char* c : classes) std::printf(",%s", c);
  std::printf(",other\n");
  for (const pp::DescribedProfile& p : profiles) {
    if (p.profile.workload.kind != pm::WorkloadKind::kModel) continue;
    pm::Node node = nodes.at(p.profile.node_name);
    const bool is_test = test.contains(node.gpu.model);
    if (!is_test && !train.contains(node.gpu.model)) continue;
    if (is_test) node.measured = pm::MeasuredRates{};
    absl::StatusOr<pp::Prediction> pred = pp::PricingPlan(*model, node).Predict(p.descriptor);
    if (!pred.ok()) {
      std::fprintf(stderr, "%s\n", pred.status().ToString().c_str());
      continue;
    }
    const std::string phase(pm::PhaseName(p.profile.workload.phase));
    std::printf("%s,%s,%s,%s,%s,%lld,%.2f,%.2f,%.2f,%.2f,%.2f,%s", is_test ? "test" : "train",
                node.gpu.model.c_str(), p.profile.agent_version.c_str(),
                p.profile.workload.family.c_str(), phase.c_str(),
                static_cast<long long>(p.profile.workload.batch_size), p.profile.iteration.mean_ms,
                pred->level1_ms, pred->iteration_ms, pred->lo_ms, pred->hi_ms,
                std::string(pp::MethodName(pred->method)).c_str());
    double other = 0;
    std::map<std::string, double> by_class = pred->breakdown_ms;
    // Back to the level-1 estimates: level 2's host terms out of "host".
    by_class["host"] -= pred->host_ms;
    for (auto& [k, v] : by_class) v /= pred->breakdown_scale;
    for (const char* c : classes) {
      auto it = by_class.find(c);
      std::printf(",%.2f", it == by_class.end() ? 0.0 : it->second);
      if (it != by_class.end()) by_class.erase(it);
    }
    for (const auto& [k, v] : by_class) other += v;
    std::printf(",%.2f\n", other);
  }
  return 0;
}
