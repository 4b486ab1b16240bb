#include "client/sweep.h"

#include <iostream>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "base/status_macros.h"
#include "client/job_cost.h"
#include "client/predict_batch.h"
#include "client/proto_json.h"
#include "client/table.h"
#include "nlohmann/json.hpp"
#include "perfcast/v1/predictor.grpc.pb.h"

namespace perfcast::client {
namespace {

bool KnownKey(absl::string_view key) {
  static const std::set<std::string> kKeys = {
      "batch",      "gpu",           "node",          "precision",       "phase",
      "optimizer",  "samples",       "epochs",        "iterations",      "hf-config",
      "torchvision", "seq-len",      "image",         "gpu-count",       "data-parallel",
      "tensor-parallel", "pipeline-parallel", "micro-batches", "zero",
      "activation-checkpointing", "framework", "loop"};
  if (absl::StartsWith(key, "param.")) return key.size() > 6;
  return kKeys.count(std::string(key)) > 0;
}

}  // namespace

absl::StatusOr<std::vector<SweepAxis>> ParseSweeps(const std::vector<std::string>& specs) {
  std::vector<SweepAxis> axes;
  std::set<std::string> seen;
  size_t points = 1;
  for (const std::string& spec : specs) {
    std::pair<std::string, std::string> kv = absl::StrSplit(spec, absl::MaxSplits('=', 1));
    SweepAxis axis;
    axis.key = std::string(absl::StripAsciiWhitespace(kv.first));
    if (axis.key.empty() || spec.find('=') == std::string::npos) {
      return absl::InvalidArgumentError(absl::StrCat("--sweep '", spec, "' is not key=v1,v2,..."));
    }
    if (!KnownKey(axis.key)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--sweep: unknown key '", axis.key, "' (expected ", kSweepKeys, ")"));
    }
    if (!seen.insert(axis.key).second) {
      return absl::InvalidArgumentError(absl::StrCat("--sweep: '", axis.key, "' is swept twice"));
    }
    for (absl::string_view value : absl::StrSplit(kv.second, ',')) {
      value = absl::StripAsciiWhitespace(value);
      if (value.empty()) {
        return absl::InvalidArgumentError(absl::StrCat("--sweep '", spec, "' has an empty value"));
      }
      axis.values.emplace_back(value);
    }
    points *= axis.values.size();
    if (points > kMaxSweepPoints) {
      return absl::InvalidArgumentError(
          absl::StrCat("--sweep: the grid has more than ", kMaxSweepPoints, " points"));
    }
    axes.push_back(std::move(axis));
  }
  return axes;
}

std::vector<std::vector<std::pair<std::string, std::string>>> SweepGrid(
    const std::vector<SweepAxis>& axes) {
  std::vector<std::vector<std::pair<std::string, std::string>>> grid = {{}};
  for (const SweepAxis& axis : axes) {
    std::vector<std::vector<std::pair<std::string, std::string>>> next;
    for (const auto& point : grid) {
      for (const std::string& value : axis.values) {
        next.push_back(point);
        next.back().emplace_back(axis.key, value);
      }
    }
    grid = std::move(next);
  }
  return grid;
}

absl::StatusOr<PredictFlags> ApplySweepPoint(
    const PredictFlags& base, const std::vector<std::pair<std::string, std::string>>& point) {
  PredictFlags f = base;
  for (const auto& [key, value] : point) {
    auto integer = [&](auto& out) -> absl::Status {
      if (!absl::SimpleAtoi(value, &out)) {
        return absl::InvalidArgumentError(
            absl::StrCat("--sweep ", key, ": '", value, "' is not an integer"));
      }
      return absl::OkStatus();
    };
    auto small = [&](int& out) -> absl::Status {
      int64_t wide = 0;
      RETURN_IF_ERROR(integer(wide));
      if (wide < 1 || wide > 1 << 20) {
        return absl::InvalidArgumentError(
            absl::StrCat("--sweep ", key, ": '", value, "' is not between 1 and 2^20"));
      }
      out = static_cast<int>(wide);
      return absl::OkStatus();
    };
    absl::Status status;
    // A swept batch or job size counts as given (see BuildQuery).
    if (key == "batch") f.batch_given = true;
    if (key == "samples" || key == "epochs" || key == "iterations") f.job_given = true;
    if (key == "batch") status = integer(f.batch);
    else if (key == "samples") status = integer(f.samples);
    else if (key == "epochs") status = integer(f.epochs);
    else if (key == "iterations") status = integer(f.iterations);
    else if (key == "gpu") { f.gpu = value; f.node.clear(); }
    else if (key == "node") { f.node = value; f.gpu.clear(); }
    else if (key == "precision") f.precision = value;
    else if (key == "phase") f.phase = value;
    else if (key == "optimizer") f.optimizer = value;
    else if (key == "loop") f.loop = value;
    else if (key == "hf-config") { f.hf_config = value; f.torchvision.clear(); f.family.clear(); }
    else if (key == "torchvision") { f.torchvision = value; f.hf_config.clear(); f.family.clear(); }
    else if (key == "seq-len") status = integer(f.seq_len);
    else if (key == "image") status = integer(f.image);
    // A GPU count is data parallelism: the batch split over the GPUs.
    else if (key == "gpu-count" || key == "data-parallel") status = small(f.data_parallel);
    else if (key == "tensor-parallel") status = small(f.tensor_parallel);
    else if (key == "pipeline-parallel") status = small(f.pipeline_parallel);
    else if (key == "micro-batches") status = small(f.micro_batches);
    else if (key == "zero") status = small(f.zero);
    else if (key == "framework") f.framework = value;
    else if (key == "activation-checkpointing") {
      if (!absl::SimpleAtob(value, &f.activation_checkpointing)) {
        status = absl::InvalidArgumentError(absl::StrCat(
            "--sweep activation-checkpointing: '", value, "' is not true/false/1/0"));
      }
    }
    else if (absl::StartsWith(key, "param.")) {
      int64_t unused = 0;
      status = integer(unused);
      f.params.push_back(absl::StrCat(key.substr(6), "=", value));
    }
    if (!status.ok()) return status;
  }
  return f;
}

std::optional<CliError> RunSweep(ClientContext& context, const PredictFlags& flags) {
  absl::StatusOr<std::vector<SweepAxis>> axes = ParseSweeps(flags.sweeps);
  if (!axes.ok()) return CliError{kExitUsage, std::string(axes.status().message())};
  const auto grid = SweepGrid(*axes);
  v1::PredictBatchRequest request;
  for (const auto& point : grid) {
    absl::StatusOr<PredictFlags> f = ApplySweepPoint(flags, point);
    if (!f.ok()) return CliError{kExitUsage, std::string(f.status().message())};
    if (f->family.empty() && f->hf_config.empty() && f->torchvision.empty()) {
      return CliError{kExitUsage,
                      "predict --sweep needs --family, --hf-config or --torchvision (or sweeps "
                      "hf-config= or torchvision=)"};
    }
    if (f->node.empty() == f->gpu.empty()) {
      return CliError{kExitUsage,
                      "predict --sweep needs a target: --gpu or --node, or sweep gpu= or node="};
    }
    if (auto error = BuildQuery(*f, request.add_queries())) return error;
  }
  grpc::ClientContext call;
  context.SetDeadline(call);
  std::vector<v1::PredictResult> results;
  absl::StatusOr<std::shared_ptr<grpc::Channel>> channel = context.Channel();
  if (!channel.ok()) return Failed(channel.status());
  if (auto error = PredictBatch(*v1::Predictor::NewStub(*channel), call,
                                std::move(request), results)) {
    return error;
  }
  if (results.size() != grid.size()) {
    return CliError{kExitFailure, absl::StrCat("the server answered ", results.size(), " of ",
                                               grid.size(), " sweep points")};
  }
  std::vector<std::string> header;
  for (const SweepAxis& axis : *axes) header.push_back(axis.key);
  for (const char* column :
       {"MS/ITER", "LOW", "HIGH", "JOB", "COST USD", "PEAK MEMORY", "RATES", "ERROR"}) {
    header.push_back(column);
  }
  Table table(header);
  int failed = 0;
  for (size_t i = 0; i < grid.size(); ++i) {
    const v1::PredictResult& r = results[i];
    if (r.code() != 0) ++failed;
    if (context.Structured()) {
      nlohmann::json point = nlohmann::json::object();
      for (const auto& [key, value] : grid[i]) point[key] = value;
      std::optional<JobCost> cost = CostOfPrediction(r.prediction());
      context.Out().Record({{"sweep", point},
                            {"result", context.ToJson(r)},
                            {"cost", r.code() == 0 && cost.has_value() ? CostJson(*cost)
                                                                       : nlohmann::json()}});
      continue;
    }
    std::vector<std::string> row;
    for (const auto& [key, value] : grid[i]) row.push_back(value);
    if (r.code() != 0) {
      row.insert(row.end(), {"-", "-", "-", "-", "-", "-", "-", r.error()});
    } else {
      const v1::PredictResponse& p = r.prediction();
      row.push_back(absl::StrFormat("%.3f", p.iteration_ms()));
      row.push_back(absl::StrFormat("%.3f", p.iteration_ms_low()));
      row.push_back(absl::StrFormat("%.3f", p.iteration_ms_high()));
      row.push_back(p.iterations() > 0 ? Duration(p.job_seconds()) : "-");
      std::optional<JobCost> cost = CostOfPrediction(p);
      row.push_back(cost.has_value() ? absl::StrFormat("%.2f", cost->usd) : "-");
      row.push_back(p.has_memory() ? GiB(p.memory().peak_bytes()) : "-");
      row.push_back(p.rate_source());
      row.push_back("");
    }
    table.AddRow(std::move(row));
  }
  if (context.output == OutputFormat::kTable) table.Print(std::cout, context.TableWidth());
  if (failed > 0) {
    return CliError{kExitPartial, absl::StrCat(failed, " of ", grid.size(), " sweep points failed")};
  }
  return std::nullopt;
}

}  // namespace perfcast::client
