#include "client/predict_query.h"

#include <fstream>
#include <sstream>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "google/protobuf/util/json_util.h"
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
  w->set_kind(v1::WORKLOAD_KIND_MODEL);
  w->set_family(f.family);
  if (auto error = AddModelSource(f, w)) return error;
  for (const std::string& item : f.params) {
    for (absl::string_view part : absl::StrSplit(item, absl::ByAnyChar(";,"), absl::SkipEmpty())) {
      std::pair<absl::string_view, absl::string_view> kv = absl::StrSplit(part, absl::MaxSplits('=', 1));
      int64_t value = 0;
      if (kv.first.empty() || !absl::SimpleAtoi(kv.second, &value)) {
        return CliError{kExitUsage, absl::StrCat("--param '", part, "' is not name=integer")};
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
  return std::nullopt;
}

std::optional<CliError> BuildQuery(const PredictFlags& f, v1::PredictRequest* q) {
  if (auto error = BuildWorkload(f, q->mutable_workload())) return error;
  if (!f.node.empty()) {
    q->set_node_name(f.node);
  } else if (!f.gpu.empty()) {
    q->set_catalog_gpu(f.gpu);
  }
  if (f.samples != 0 || f.epochs != 0 || f.iterations != 0) {
    q->mutable_job()->set_samples(f.samples);
    q->mutable_job()->set_epochs(f.epochs);
    q->mutable_job()->set_iterations(f.iterations);
  }
  q->set_model_name(f.model);
  return std::nullopt;
}

std::string Duration(double seconds) {
  if (seconds < 120) return absl::StrFormat("%.1f s", seconds);
  if (seconds < 7200) return absl::StrFormat("%.1f min", seconds / 60);
  if (seconds < 72 * 3600) return absl::StrFormat("%.2f h", seconds / 3600);
  return absl::StrFormat("%.1f days", seconds / 86400);
}

std::string GiB(double bytes) { return absl::StrFormat("%.1f GiB", bytes / (1024.0 * 1024 * 1024)); }

std::string Json(const google::protobuf::Message& message) {
  std::string out;
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  (void)google::protobuf::util::MessageToJsonString(message, &out, options);
  return out;
}

}  // namespace perfcast::client
