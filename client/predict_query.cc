#include "client/predict_query.h"

#include <fstream>
#include <sstream>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "client/suggest.h"
#include "client/text_input.h"
#include "models/descriptor.h"
#include "models/gpu_catalog.h"
#include "models/workload.h"
#include "proto/convert.h"

namespace perfcast::client {

namespace {

// Puts --hf-config / --torchvision into the workload (the server resolves
// them); nothing when neither is given.
std::optional<CliError> AddModelSource(const PredictFlags& f, v1::Workload* w) {
  if (f.hf_config.empty() && f.torchvision.empty()) {
    if (f.seq_len != 0 || f.image != 0) {
      return CliError{kExitUsage, "--seq-len goes with --hf-config, --image with --torchvision"};
    }
    return std::nullopt;
  }
  if (!f.hf_config.empty() && !f.torchvision.empty()) {
    return CliError{kExitUsage, "give --hf-config or --torchvision, not both"};
  }
  if (!f.family.empty() || !f.params.empty()) {
    return CliError{kExitUsage, "--hf-config and --torchvision replace --family and --param"};
  }
  w->set_kind(v1::WORKLOAD_KIND_MODEL);
  if (!f.hf_config.empty()) {
    if (f.image != 0) return CliError{kExitUsage, "--image goes with --torchvision"};
    std::ifstream in(f.hf_config);
    if (!in) return CliError{kExitFailure, absl::StrCat("cannot read ", f.hf_config)};
    std::stringstream text;
    text << in.rdbuf();
    w->set_hf_config_json(text.str());
    if (f.seq_len != 0) (*w->mutable_params())["seq_len"] = f.seq_len;
  } else {
    if (f.seq_len != 0) return CliError{kExitUsage, "--seq-len goes with --hf-config"};
    w->set_torchvision(f.torchvision);
    if (f.image != 0) (*w->mutable_params())["image"] = f.image;
  }
  return std::nullopt;
}

}  // namespace

std::optional<CliError> BuildWorkload(const PredictFlags& f, v1::Workload* w) {
  if (!f.op.empty()) {
    if (!f.family.empty() || !f.hf_config.empty() || !f.torchvision.empty()) {
      return CliError{kExitUsage,
                      "--op (an operation) replaces --family, --hf-config and --torchvision"};
    }
    w->set_kind(v1::WORKLOAD_KIND_OPERATION);
    w->set_family(f.op);
  } else {
    w->set_kind(v1::WORKLOAD_KIND_MODEL);
    w->set_family(f.family);
  }
  if (auto error = AddModelSource(f, w)) return error;
  for (const std::string& item : f.params) {
    for (absl::string_view part : absl::StrSplit(item, absl::ByAnyChar(";,"), absl::SkipEmpty())) {
      std::pair<absl::string_view, absl::string_view> kv = absl::StrSplit(part, absl::MaxSplits('=', 1));
      int64_t value = 0;
      if (kv.first.empty() || !absl::SimpleAtoi(kv.second, &value)) {
        return CliError{kExitUsage, absl::StrCat("--param '", Printable(part), "' is not name=integer")};
      }
      (*w->mutable_params())[std::string(kv.first)] = value;
    }
  }
  w->set_batch_size(f.batch);
  absl::StatusOr<models::Precision> precision = models::ParsePrecision(f.precision);
  if (!precision.ok()) return CliError{kExitUsage, std::string(precision.status().message())};
  w->set_precision(proto::ToProto(*precision));
  absl::StatusOr<models::Phase> phase = models::ParsePhase(f.phase);
  if (!phase.ok()) return CliError{kExitUsage, std::string(phase.status().message())};
  w->set_phase(proto::ToProto(*phase));
  w->set_optimizer(f.optimizer);
  absl::StatusOr<models::Loop> loop = models::ParseLoop(f.loop);
  if (!loop.ok()) {
    return CliError{kExitUsage, absl::StrCat("--loop: ", Printable(loop.status().message()))};
  }
  w->set_loop(proto::ToProto(*loop));
  return std::nullopt;
}

std::optional<CliError> CheckFamilyFlag(const PredictFlags& f) {
  const std::string& family = f.op.empty() ? f.family : f.op;
  if (family.empty()) return std::nullopt;
  absl::Status known = models::FindFamily(family).status();
  if (known.ok()) return std::nullopt;
  std::vector<std::string> names;
  for (const models::FamilyInfo& info : models::Families()) names.push_back(info.name);
  const std::string hint = DidYouMean(family, names);
  return CliError{kExitUsage,
                  absl::StrCat(f.op.empty() ? "--family: " : "--op: ",
                               hint.empty() ? std::string(known.message())
                                            : absl::StrCat("unknown workload family '",
                                                           Printable(family), "'", hint))};
}

namespace {
std::vector<std::string> CatalogGpuNames() {
  std::vector<std::string> names;
  for (const models::GpuSpec& gpu : models::GpuCatalog::BuiltIn().gpus()) names.push_back(gpu.model);
  return names;
}

bool IsNearCatalogGpu(const std::string& typed) {
  return !DidYouMean(typed, CatalogGpuNames(), /*dash_prefixes=*/true).empty();
}
}  // namespace

std::string UnknownGpuMessage(const char* flag, const std::string& typed,
                              const absl::Status& status) {
  std::vector<std::string> names;
  for (const models::GpuSpec& gpu : models::GpuCatalog::BuiltIn().gpus()) names.push_back(gpu.model);
  const std::string hint = status.code() == absl::StatusCode::kNotFound
                               ? DidYouMean(typed, names, /*dash_prefixes=*/true)
                               : "";
  if (hint.empty()) return absl::StrCat(flag, ": ", Describe(status));
  return absl::StrCat(flag, ": NOT_FOUND: unknown GPU '", Printable(typed), "'", hint,
                      "; `perfcast gpus list` shows the catalog");
}

std::optional<CliError> BuildQuery(const PredictFlags& f, v1::PredictRequest* q) {
  if (f.node.empty() == f.gpu.empty()) {
    return CliError{kExitUsage, "give exactly one of --node (a registered node) and --gpu (a "
                                "catalog GPU, see `perfcast gpus list`)"};
  }
  if (!f.gpu.empty()) {
    absl::StatusOr<models::GpuSpec> gpu = models::GpuCatalog::BuiltIn().Find(f.gpu);
    if (gpu.ok()) {
      q->set_catalog_gpu(gpu->model);
    } else if (absl::IsNotFound(gpu.status()) && !IsNearCatalogGpu(f.gpu)) {
      // Not the catalog's and no typo of it: perhaps a registered node's GPU
      // model, which only the server knows.
      q->set_catalog_gpu(f.gpu);
    } else {
      return CliError{kExitUsage, UnknownGpuMessage("--gpu", f.gpu, gpu.status())};
    }
  } else {
    q->set_node_name(f.node);
  }
  // Presence only: the server checks the values and names what is wrong.
  const bool operation = !f.op.empty();
  if (f.family.empty() && f.hf_config.empty() && f.torchvision.empty() && !operation) {
    return CliError{kExitUsage, "--family (or --hf-config, --torchvision, --op) is required"};
  }
  if (!f.batch_given && !operation) {
    return CliError{kExitUsage, "--batch (samples per iteration) is required"};
  }
  if (!f.job_given && !operation) {
    return CliError{kExitUsage,
                    "the job size is required: --samples and --epochs, or --iterations"};
  }
  if (auto error = BuildWorkload(f, q->mutable_workload())) return error;
  // An operation's shape is in its params: batch 1 unless one is given.
  if (operation && !f.batch_given) q->mutable_workload()->set_batch_size(1);
  q->mutable_job()->set_samples(f.samples);
  q->mutable_job()->set_epochs(f.epochs);
  q->mutable_job()->set_iterations(operation && !f.job_given ? 1 : f.iterations);
  q->set_model_name(f.model);
  return BuildLayout(f, q);
}

std::optional<CliError> BuildLayout(const PredictFlags& f, v1::PredictRequest* q) {
  // The API reads 0 as 1 (unset); on the command line 0 is a mistake.
  for (auto [flag, value] : {std::pair{"--data-parallel", f.data_parallel},
                             std::pair{"--tensor-parallel", f.tensor_parallel},
                             std::pair{"--pipeline-parallel", f.pipeline_parallel},
                             std::pair{"--micro-batches", f.micro_batches}}) {
    if (value < 1) return CliError{kExitUsage, absl::StrCat(flag, " must be >= 1, got ", value)};
  }
  v1::Framework framework = v1::FRAMEWORK_PYTORCH;
  if (f.framework == "megatron") {
    framework = v1::FRAMEWORK_MEGATRON;
  } else if (f.framework == "deepspeed") {
    framework = v1::FRAMEWORK_DEEPSPEED;
  } else if (f.framework != "pytorch") {
    return CliError{kExitUsage, absl::StrCat("--framework must be pytorch, megatron or "
                                             "deepspeed, got '", f.framework, "'")};
  }
  if (f.data_parallel != 1 || f.tensor_parallel != 1 || f.pipeline_parallel != 1 ||
      f.micro_batches != 1 || f.zero != 0 || f.activation_checkpointing ||
      framework != v1::FRAMEWORK_PYTORCH) {
    v1::ParallelLayout* layout = q->mutable_parallel();
    layout->set_data_parallel(f.data_parallel);
    layout->set_tensor_parallel(f.tensor_parallel);
    layout->set_pipeline_parallel(f.pipeline_parallel);
    layout->set_micro_batches(f.micro_batches);
    // Range and combination are the server's to check (one rule for every client).
    layout->set_zero(f.zero);
    layout->set_activation_checkpointing(f.activation_checkpointing);
    layout->set_framework(framework);
  }
  return std::nullopt;
}

std::string Duration(double seconds) {
  if (seconds < 120) return absl::StrFormat("%.1f s", seconds);
  if (seconds < 7200) return absl::StrFormat("%.1f min", seconds / 60);
  if (seconds < 72 * 3600) return absl::StrFormat("%.2f h", seconds / 3600);
  return absl::StrFormat("%.1f days", seconds / 86400);
}

TimeUnit TimeUnitFor(double seconds) {
  if (seconds < 120) return {"s", 1};
  if (seconds < 7200) return {"min", 60};
  if (seconds < 72 * 3600) return {"h", 3600};
  return {"days", 86400};
}

std::string InUnit(double seconds, TimeUnit unit) {
  const double value = seconds / unit.seconds;
  return absl::StrFormat(value < 10 ? "%.2f %s" : "%.1f %s", value, unit.name);
}

std::string GiB(double bytes) { return absl::StrFormat("%.1f GiB", bytes / (1024.0 * 1024 * 1024)); }

}  // namespace perfcast::client
