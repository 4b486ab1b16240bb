#include "client/memory_breakdown.h"

#include <utility>

#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "client/table.h"
#include "models/descriptor.h"
#include "predictor/memory.h"
#include "server/request_validation.h"

namespace perfcast::client {
namespace {

constexpr double kGiBytes = 1024.0 * 1024 * 1024;

std::string Gib(double bytes) { return absl::StrFormat("%.2f", bytes / kGiBytes); }

// The parts of the breakdown in the order people read them, with their JSON
// names; the allocated peak is the larger of the step's and the optimizer
// step's, so both sets are listed.
std::vector<std::pair<const char*, double>> Parts(const predictor::LayoutMemory& m) {
  return {{"weights", m.parameters},
          {"gradients", m.gradients},
          {"optimizer_states", m.optimizer},
          {"amp_copies", m.amp_copies},
          {"gathered_layers", m.gathered},
          {"communication_buckets", m.buckets},
          {"activations", m.activations},
          {"optimizer_temporaries", m.optimizer_temporaries},
          {"allocated_peak", m.allocated()},
          {"allocator_slack", m.slack},
          {"cuda_context", m.context}};
}

const char* PartLabel(const std::string& name) {
  if (name == "weights") return "weights (master)";
  if (name == "gradients") return "gradients";
  if (name == "optimizer_states") return "optimizer states";
  if (name == "amp_copies") return "16-bit weight copies (autocast)";
  if (name == "gathered_layers") return "gathered layers (ZeRO-3)";
  if (name == "communication_buckets") return "communication buckets";
  if (name == "activations") return "activations (in-flight micro-batches)";
  if (name == "optimizer_temporaries") return "optimizer step temporaries";
  if (name == "allocated_peak") return "allocated peak";
  if (name == "allocator_slack") return "allocator slack";
  return "CUDA context";
}

}  // namespace

absl::StatusOr<MemoryBreakdown> BreakDownMemory(const v1::PredictRequest& request,
                                                absl::Span<const models::GpuSpec> gpus) {
  ASSIGN_OR_RETURN(models::WorkloadDescriptor described, server::DescribeWorkload(request));
  ASSIGN_OR_RETURN(std::optional<predictor::ParallelLayout> layout,
                   server::LayoutFromRequest(request));
  MemoryBreakdown out;
  out.workload = described.spec;
  out.layout = layout.value_or(predictor::ParallelLayout{});
  RETURN_IF_ERROR(predictor::ValidateLayout(out.workload, out.layout, /*max_gpus=*/0));
  // No fitted model: the analytic terms.
  const predictor::MemoryModel analytic;
  ASSIGN_OR_RETURN(out.memory, predictor::EstimateLayoutMemory(analytic, out.workload, out.layout));
  const double required = out.memory.required();
  for (const models::GpuSpec& gpu : gpus) {
    if (gpu.memory_gib <= 0) continue;
    GpuMemoryFit fit;
    fit.gpu = gpu.model;
    fit.device_bytes = gpu.memory_gib * kGiBytes;
    fit.fits = required <= fit.device_bytes;
    fit.free_bytes = fit.device_bytes - required;
    if (!fit.fits) {
      if (std::optional<predictor::ParallelLayout> nearest = predictor::NearestFittingLayout(
              analytic, out.workload, gpu, out.layout, /*max_gpus=*/0)) {
        fit.nearest_change = predictor::DescribeChange(out.layout, *nearest);
      }
    }
    out.gpus.push_back(std::move(fit));
  }
  return out;
}

nlohmann::json MemoryBreakdownJson(const MemoryBreakdown& b) {
  nlohmann::json doc;
  doc["workload"] = b.workload.Key();
  doc["layout"] = predictor::DescribeLayout(b.layout);
  doc["gpus_per_job"] = b.layout.gpus();
  doc["method"] = b.memory.method;
  nlohmann::json parts = nlohmann::json::object();
  for (const auto& [name, bytes] : Parts(b.memory)) parts[name] = bytes;
  doc["per_gpu_bytes"] = std::move(parts);
  doc["required_bytes"] = b.memory.required();
  nlohmann::json gpus = nlohmann::json::array();
  for (const GpuMemoryFit& g : b.gpus) {
    gpus.push_back({{"gpu", g.gpu},
                    {"memory_bytes", g.device_bytes},
                    {"fits", g.fits},
                    {"free_bytes", g.free_bytes},
                    {"nearest_change", g.nearest_change}});
  }
  doc["gpus"] = std::move(gpus);
  return doc;
}

void PrintMemoryBreakdown(const MemoryBreakdown& b, size_t width, std::ostream& out) {
  out << absl::StrFormat("%s, %s: memory per GPU (%s memory model, no fitted model)\n",
                         b.workload.Key(), predictor::DescribeLayout(b.layout), b.memory.method);
  Table parts({"PART", "GIB"});
  for (const auto& [name, bytes] : Parts(b.memory)) {
    if (bytes == 0 && std::string(name) != "activations") continue;
    parts.AddRow({PartLabel(name), Gib(bytes)});
  }
  parts.AddRow({"required per GPU", Gib(b.memory.required())});
  parts.Print(out, width);
  if (b.gpus.empty()) return;
  out << "\n";
  Table gpus({"GPU", "MEMORY GIB", "FITS", "FREE GIB", "NEAREST CHANGE THAT FITS"});
  int fitting = 0;
  for (const GpuMemoryFit& g : b.gpus) {
    fitting += g.fits ? 1 : 0;
    gpus.AddRow({g.gpu, Gib(g.device_bytes), g.fits ? "yes" : "no",
                 g.fits ? Gib(g.free_bytes) : "",
                 g.fits ? "" : (g.nearest_change.empty() ? "none tried fits" : g.nearest_change)});
  }
  gpus.Print(out, width);
  out << absl::StrFormat("fits on %d of %d GPUs\n", fitting, b.gpus.size());
}

}  // namespace perfcast::client
