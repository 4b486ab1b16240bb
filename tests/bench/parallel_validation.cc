// parallel_validation: the parallel step predictor (predictor/parallel.h)
// against NeuSight's public 4-GPU training labels (dp4, tp4, pp4 of GPT-2
// large and GPT-3 XL on A100 SXM and H100 SXM servers,
// data/external/neusight/parallel_e2e.csv), printing each row and the MAPE per
// strategy.
//
//   parallel_validation [data/external/neusight/parallel_e2e.csv]
//
// It measures the composition (communication model, Megatron split, 1F1B
// bubble, DDP overlap), not single-GPU transfer: each GPU's compute is
// anchored on NeuSight's own single-GPU label of the same model on the same
// GPU (forward + backward, fp32), at the batch nearest to the per-GPU
// micro-batch. The anchor sets one scale, measured ÷ roofline, that a
// level-2 model applies to the level-1 (roofline) sum; the split, stage and
// batch changes then follow the descriptor. The A100 SXM4 40GB server has
// no single-GPU label, so its rows anchor on the A100 80GB PCIe board and
// also carry that board difference: they are reported apart.
// NeuSight's labels time forward + backward only (the optimizer step is
// outside its timed region), so the optimizer is left out here as well.
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "models/descriptor.h"
#include "models/gpu_catalog.h"
#include "predictor/parallel.h"
#include "predictor/predictor.h"

namespace perfcast {
namespace {

struct Row {
  std::string gpu, model;
  int64_t seq_len = 0, batch = 0;
  predictor::ParallelLayout layout;
  double measured_ms = 0;
};

// NeuSight's configurations (scripts/asplos/data/DLmodel_configs): GPT-2
// style blocks, learned positions, tied LM head.
models::WorkloadSpec Spec(const std::string& model, int64_t seq_len, int64_t batch) {
  models::WorkloadSpec spec;
  spec.family = "decoder";
  if (model == "gpt2_large") {
    spec.params = {{"layers", 36}, {"hidden", 1280}, {"heads", 20}, {"ffn", 5120}};
  } else {  // gpt3_xl as NeuSight configures it
    spec.params = {{"layers", 24}, {"hidden", 3072}, {"heads", 24}, {"ffn", 12288}};
  }
  spec.params["seq_len"] = seq_len;
  spec.params["positions"] = seq_len;
  spec.params["vocab"] = 50257;
  spec.batch_size = batch;
  spec.precision = models::Precision::kFp32;
  return spec;
}

std::string CatalogGpu(const std::string& neusight_gpu) {
  if (neusight_gpu == "NVIDIA_H100_80GB_HBM3") return "H100-SXM5-80GB";
  if (neusight_gpu == "NVIDIA_A100-SXM4-40GB") return "A100-SXM4-40GB";
  if (neusight_gpu == "NVIDIA_A100_80GB_PCIe") return "A100-PCIE-80GB";
  if (neusight_gpu == "NVIDIA_L4") return "L4-24GB";
  return "";
}

// The board whose single-GPU labels anchor a GPU's compute.
std::string AnchorGpu(const std::string& gpu) {
  return gpu == "NVIDIA_A100-SXM4-40GB" ? "NVIDIA_A100_80GB_PCIe" : gpu;
}

// A model whose every operation is priced at its roofline time and whose
// level 2 multiplies the level-1 sum by `scale`.
predictor::PredictorModel ScaledRoofline(double scale) {
  predictor::FittedModel level2;
  level2.level = 2;
  level2.features = {"level1_ms"};
  level2.fit.mean = {0};
  level2.fit.scale = {1};
  level2.fit.coefficients = {scale};
  level2.cv_error_quantiles.assign(101, 0.0);
  level2.feature_min = {0};
  level2.feature_max = {1e12};
  predictor::FittedModel gemm = level2;
  gemm.level = 1;
  gemm.features = {"roofline_ms"};
  gemm.fit.coefficients = {1};
  predictor::PredictorModel model;
  model.level1[models::OpClass::kGemm] = gemm;
  model.level2[models::Phase::kTrain] = level2;
  return model;
}

models::Node CatalogNode(const std::string& gpu) {
  models::Node node;
  node.name = gpu;
  node.gpu_count = 8;
  node.gpu = *models::GpuCatalog::BuiltIn().Find(CatalogGpu(gpu));
  return node;
}

// Forward + backward ms of `spec` on `node` under a unit scale: the level-1
// sum without the optimizer.
double RooflineForwardBackward(const models::WorkloadSpec& spec, const models::Node& node) {
  absl::StatusOr<predictor::ParallelPrediction> p =
      predictor::PredictParallel(ScaledRoofline(1), spec, node, {});
  if (!p.ok()) {
    std::fprintf(stderr, "%s\n", std::string(p.status().message()).c_str());
    std::exit(1);
  }
  return p->step_ms - p->optimizer_ms;
}

int Main(int argc, char** argv) {
  const std::string path = argc > 1 ? argv[1] : "data/external/neusight/parallel_e2e.csv";
  std::ifstream in(path);
  if (!in) {
    std::fprintf(stderr, "parallel_validation: cannot read %s\n", path.c_str());
    return 1;
  }
  std::vector<Row> single, multi;
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    std::vector<std::string> f = absl::StrSplit(line, ',');
    if (f.size() < 9) continue;
    Row r;
    r.gpu = f[0];
    r.model = f[1];
    int64_t v[6];
    for (int i = 0; i < 6; ++i) (void)absl::SimpleAtoi(f[2 + i], &v[i]);
    r.seq_len = v[0];
    r.batch = v[1];
    // Megatron's layouts: its 1F1B runs pp4 with one micro-batch.
    r.layout = {.data = static_cast<int>(v[2]),
                .tensor = static_cast<int>(v[3]),
                .pipeline = static_cast<int>(v[4]),
                .micro_batches = static_cast<int>(v[5]),
                .framework = predictor::Framework::kMegatron};
    (void)absl::SimpleAtod(f[8], &r.measured_ms);
    if (CatalogGpu(r.gpu).empty()) continue;
    (r.layout.gpus() == 1 ? single : multi).push_back(r);
  }

  std::map<std::string, std::vector<double>> errors;  // strategy -> |rel. error|
  std::printf("%-22s %-10s %5s %-9s %10s %10s %7s  %s\n", "gpu", "model", "batch", "layout",
              "measured", "predicted", "error", "parts (compute / bubble / tp / pp / dp exposed)");
  for (const Row& r : multi) {
    const int64_t micro = r.batch / (int64_t{r.layout.data} * r.layout.micro_batches);
    // The anchor: the same model's single-GPU label at the nearest batch.
    const Row* anchor = nullptr;
    for (const Row& s : single) {
      if (s.gpu != AnchorGpu(r.gpu) || s.model != r.model) continue;
      if (anchor == nullptr || std::abs(std::log(double(s.batch) / micro)) <
                                   std::abs(std::log(double(anchor->batch) / micro))) {
        anchor = &s;
      }
    }
    if (anchor == nullptr) {
      std::printf("%-22s %-10s: no single-GPU anchor\n", r.gpu.c_str(), r.model.c_str());
      continue;
    }
    const double scale = anchor->measured_ms /
                         RooflineForwardBackward(Spec(r.model, r.seq_len, anchor->batch),
                                                 CatalogNode(anchor->gpu));
    absl::StatusOr<predictor::ParallelPrediction> p = predictor::PredictParallel(
        ScaledRoofline(scale), Spec(r.model, r.seq_len, r.batch), CatalogNode(r.gpu), r.layout);
    if (!p.ok()) {
      std::printf("%s: %s\n", r.model.c_str(), std::string(p.status().message()).c_str());
      continue;
    }
    const double predicted = p->step_ms - p->optimizer_ms;
    const double error = (predicted - r.measured_ms) / r.measured_ms;
    const std::string strategy = r.layout.data > 1     ? "dp4"
                                 : r.layout.tensor > 1 ? "tp4"
                                                       : "pp4";
    const bool cross_board = AnchorGpu(r.gpu) != r.gpu;
    errors[(cross_board ? "A100-SXM (PCIe anchor) " : "H100 ") + strategy].push_back(
        std::abs(error));
    errors[std::string("all ") + strategy].push_back(std::abs(error));
    std::printf("%-22s %-10s %5lld dp%dtp%dpp%d %10.1f %10.1f %+6.1f%%  %.1f / %.1f / %.1f / %.1f / %.1f\n",
                r.gpu.c_str(), r.model.c_str(), static_cast<long long>(r.batch), r.layout.data,
                r.layout.tensor, r.layout.pipeline, r.measured_ms, predicted, 100 * error,
                p->compute_ms, p->bubble_ms, p->tp_comm_ms, p->pp_comm_ms, p->dp_exposed_ms);
  }
  std::printf("\nMAPE by strategy (|predicted - measured| / measured):\n");
  for (const auto& [strategy, list] : errors) {
    double sum = 0;
    for (double e : list) sum += e;
    std::printf("  %-28s %5.1f%%  (%zu rows)\n", strategy.c_str(), 100 * sum / list.size(),
                list.size());
  }
  return 0;
}

}  // namespace
}  // namespace perfcast

int main(int argc, char** argv) { return perfcast::Main(argc, argv); }
