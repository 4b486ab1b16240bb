// perfcast fit | predict | models list|get | evaluate
#include <algorithm>
#include <cmath>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <sstream>

#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "base/status_macros.h"
#include "client/command.h"
#include "client/job_cost.h"
#include "client/predict_query.h"
#include "client/proto_json.h"
#include "client/sweep.h"
#include "client/report_html.h"
#include "client/table.h"
#include "client/text_input.h"
#include "models/csv_reader.h"
#include "models/gpu_catalog.h"
#include "models/workload.h"
#include "nlohmann/json.hpp"
#include "perfcast/v1/predictor.grpc.pb.h"
#include "proto/batch_results.h"
#include "proto/convert.h"

namespace perfcast::client {
namespace {

absl::StatusOr<std::unique_ptr<v1::Predictor::Stub>> Stub(ClientContext& context) {
  ASSIGN_OR_RETURN(std::shared_ptr<grpc::Channel> channel, context.Channel());
  return v1::Predictor::NewStub(channel);
}

// The GPUs of --gpu, --exclude-gpu, --train-gpu or --test-gpu, each resolved
// by ResolveGpuFlag; the server checks unknown ones against its nodes.
std::optional<CliError> AddGpus(const char* flag, const std::vector<std::string>& names,
                                google::protobuf::RepeatedPtrField<std::string>* out) {
  for (std::string name : names) {
    if (auto error = ResolveGpuFlag(flag, name)) return error;
    *out->Add() = std::move(name);
  }
  return std::nullopt;
}

struct SelectionFlags {
  std::vector<std::string> gpus;
  std::vector<std::string> exclude_gpus;
  std::vector<std::string> families;
  std::string phase;
  int folds = 0;
  std::string group_by = "none";
  int max_features = 0;
  double ridge = 0;
  int method_version = 0;
  bool all_methods = false;
  bool newest_per_gpu = false;
  bool exclude_imported = false;

  void AddTo(CLI::App* command) {
    command->add_option("--gpu", gpus, "Only profiles of these GPU models");
    command->add_option("--exclude-gpu", exclude_gpus, "Leave these GPU models out");
    command->add_option("--family", families, "Only these model families");
    command->add_option("--phase", phase, "train or inference (default: both)");
    command->add_option("--folds", folds, "Cross-validation folds (default 5)");
    command->add_option("--group-by", group_by, "Folds: none, gpu or family")
        ->check(CLI::IsMember({"none", "gpu", "family"}));
    command->add_option("--max-features", max_features, "Features per regression");
    command->add_option("--ridge", ridge, "Ridge penalty");
    CLI::Option* method = command->add_option(
        "--method-version", method_version,
        "Only profiles of this measurement method (default: the newest among the selected)");
    method->check(CLI::PositiveNumber);
    CLI::Option* all = command->add_flag("--all-methods", all_methods,
                                         "Profiles of every measurement method together");
    all->excludes(method);
    command
        ->add_flag("--newest-per-gpu", newest_per_gpu,
                   "The newest measurement method of each GPU model (GPUs profiled by "
                   "different agent versions)")
        ->excludes(method)
        ->excludes(all);
    command->add_flag("--exclude-imported", exclude_imported,
                      "Leave out profiles imported from elsewhere (not measured by an agent: "
                      "your own runs, public measurements), which are used by default");
  }

  std::optional<CliError> Fill(v1::ProfileSelection* selection, v1::FitOptions* options) const {
    if (auto error = AddGpus("--gpu", gpus, selection->mutable_gpu_models())) return error;
    if (auto error =
            AddGpus("--exclude-gpu", exclude_gpus, selection->mutable_exclude_gpu_models())) {
      return error;
    }
    for (const auto& f : families) selection->add_families(f);
    if (!phase.empty()) {
      absl::StatusOr<models::Phase> parsed = models::ParsePhase(phase);
      if (!parsed.ok()) return CliError{kExitUsage, std::string(parsed.status().message())};
      selection->set_phase(proto::ToProto(*parsed));
    }
    selection->set_method_version(method_version);
    selection->set_all_methods(all_methods);
    selection->set_newest_per_gpu(newest_per_gpu);
    selection->set_exclude_imported(exclude_imported);
    options->set_folds(folds);
    options->set_max_features(max_features);
    options->set_ridge(ridge);
    options->set_group_by(group_by == "gpu"      ? v1::GROUP_BY_GPU
                          : group_by == "family" ? v1::GROUP_BY_FAMILY
                                                 : v1::GROUP_BY_NONE);
    return std::nullopt;
  }
};

// `stream`: a list's records (models list) rather than one answer.
void PrintModels(ClientContext& context, const std::vector<v1::ModelSummary>& models,
                 bool stream) {
  if (context.Structured()) {
    for (const auto& m : models) {
      stream ? context.Out().Record(context.ToJson(m)) : context.Out().Document(context.ToJson(m));
    }
    return;
  }
  Table table({"ID", "NAME", "VERSION", "TARGET", "CV MAPE", "SUMMARY"});
  for (const auto& m : models) {
    table.AddRow({absl::StrCat(m.id()), m.name(), absl::StrCat(m.version()), m.target(),
                  absl::StrFormat("%.1f%%", 100 * m.cv_mape()), m.summary()});
  }
  table.Print(std::cout, context.TableWidth());
}

struct FitFlags {
  std::string name;
  SelectionFlags selection;
  bool calibrate = false;
};

std::optional<CliError> RunFit(ClientContext& context, const FitFlags& flags) {
  v1::FitRequest request;
  request.set_model_name(flags.name);
  if (auto error = flags.selection.Fill(request.mutable_selection(), request.mutable_options())) {
    return error;
  }
  request.mutable_options()->set_calibrate(flags.calibrate);
  grpc::ClientContext call;
  call.set_deadline(std::chrono::system_clock::now() +
                    std::chrono::seconds(std::max<int64_t>(600, context.timeout_s)));
  v1::FitResponse response;
  absl::StatusOr<std::unique_ptr<v1::Predictor::Stub>> stub = Stub(context);
  if (!stub.ok()) return Failed(stub.status());
  grpc::Status status = (*stub)->Fit(&call, request, &response);
  if (!status.ok()) return CallFailed(status);
  PrintModels(context, {response.model()}, /*stream=*/false);
  // What the selection left out and why, and the calibrations made.
  if (!context.Structured()) {
    for (const std::string& note : response.model().notes()) {
      std::cout << "note: " << note << "\n";
    }
  }
  return std::nullopt;
}

// "decoder{heads=12,hidden=768,...}": the family and parameters predicted.
std::string WorkloadText(const v1::Workload& w) {
  const std::map<std::string, int64_t> params(w.params().begin(), w.params().end());
  return absl::StrCat(w.family(), "{",
                      absl::StrJoin(params, ",", absl::PairFormatter("=")), "}");
}

void PrintPrediction(const ClientContext& context, const v1::PredictRequest& q,
                     const v1::PredictResponse& r) {
  if (!q.workload().hf_config_json().empty() || !q.workload().torchvision().empty()) {
    std::cout << "resolved to " << WorkloadText(r.workload()) << "\n";
  }
  for (const std::string& note : r.notes()) std::cout << "note: " << note << "\n";
  const bool operation = q.workload().kind() == v1::WORKLOAD_KIND_OPERATION;
  std::cout << absl::StrFormat("%s on %s: %.3f ms per %s (%.3f .. %.3f), level %d, %s, %s rates\n",
                               r.workload().family().empty() ? q.workload().family()
                                                             : r.workload().family(),
                               r.gpu_model(), r.iteration_ms(), operation ? "call" : "iteration",
                               r.iteration_ms_low(), r.iteration_ms_high(), r.level(),
                               r.method(), r.rate_source());
  if (!r.distance().summary().empty()) std::cout << "distance: " << r.distance().summary() << "\n";
  if (r.loop().loop() == v1::LOOP_PYTHON) {
    const std::string& source = r.loop().per_op_source();
    const std::string from =
        source == "probe" && r.loop().per_op_nodes() > 0
            ? absl::StrCat("from the probe (", r.loop().per_op_nodes(),
                           r.loop().per_op_nodes() == 1 ? " node" : " nodes",
                           " of that GPU: the median, the band spanning them)")
        : source == "probe"     ? absl::StrCat("measured by the probe on ", r.loop().per_op_node())
        : source == "cpu-score" ? std::string("estimated from the CPU score")
        : source == "reference" ? std::string("of a reference host")
                                : absl::StrCat("from ", source);
    std::cout << absl::StrFormat(
        "loop python: %.3f ms of Python host work per step (%.0f Python calls, %.0f launches, "
        "%.1f us per operation %s) against the C++ loop's %.3f ms: %s\n",
        r.loop().host_ms(), r.loop().python_calls(), r.loop().kernel_launches(),
        r.loop().per_op_us(), from, r.loop().cpp_ms(),
        r.loop().host_bound() ? "Python's host work binds the step"
                              : "Python's host work hides behind the C++ loop's step");
  } else if (r.loop().loop() == v1::LOOP_CPP) {
    std::cout << "loop cpp: the agent's LibTorch loop, as profiles measure it\n";
  }
  if (r.method() == "two-level-reduced") {
    std::cout << "too few whole-model rows to select features: the level-1 sum times one "
                 "fitted ratio, with a wider interval\n";
  } else if (r.method() == "level1-sum") {
    std::cout << "no whole-model model for this phase: the level-1 sum, its interval widened\n";
  } else if (r.method() == "level1-fallback") {
    std::cout << "the whole-model model extrapolated below this step's roofline time on the "
                 "node: the level-1 sum instead, its interval widened\n";
  }
  if (r.iterations() > 0 && !(operation && r.iterations() == 1)) {
    std::cout << absl::StrFormat("job: %d %s, %s (%s .. %s)\n", r.iterations(),
                                 operation ? "calls" : "iterations", Duration(r.job_seconds()),
                                 Duration(r.job_seconds_low()), Duration(r.job_seconds_high()));
    if (std::optional<JobCost> cost = CostOfPrediction(r); cost.has_value()) {
      std::cout << "cost: " << CostText(*cost) << "\n";
      if (const std::string stale = StalePriceWarning({cost->price}, absl::Now()); !stale.empty()) {
        std::cout << "warning: " << stale << "; `perfcast recommend --prices FILE` takes current "
                     "ones\n";
      }
    }
  }
  // An operation is its own breakdown.
  if (!operation) {
    Table table({"OPERATION CLASS", "MS/ITER", "SHARE"});
    for (const auto& b : r.breakdown()) {
      table.AddRow({b.op_class(), absl::StrFormat("%.4f", b.ms()), absl::StrFormat("%.1f%%", 100 * b.share())});
    }
    table.Print(std::cout, context.TableWidth());
  }
  if (r.has_parallel()) {
    // level1_ms is one micro-batch's on one GPU: not what the step sums.
    std::cout << absl::StrFormat(
        "breakdown: each GPU's share of the operations at level 1, scaled by %.4f (level 2 over "
        "level 1 of one micro-batch, %.3f ms), plus communication and the pipeline bubble: adds "
        "up to the step\n",
        r.breakdown_scale(), r.level1_ms());
  } else if (r.level1_ms() > 0 && r.host_ms() > 0) {
    std::cout << absl::StrFormat(
        "breakdown: %.3f ms (%.0f%%) is host work, in \"host\" (the step is %s); the "
        "level-1 estimates (%.3f ms in all) scaled by %.4f make up the rest\n",
        r.host_ms(), 100 * r.host_ms() / r.iteration_ms(),
        r.host_ms() >= 0.5 * r.iteration_ms() ? "host-bound" : "mostly device work",
        r.level1_ms(), r.breakdown_scale());
  } else if (r.level1_ms() > 0 && r.breakdown_scale() != 1) {
    std::cout << absl::StrFormat(
        "breakdown: the level-1 estimates (%.3f ms in all) scaled by %.4f to add up to the answer\n",
        r.level1_ms(), r.breakdown_scale());
  }
  std::cout << absl::StrFormat("model %d (v%d), CV MAPE %.1f%%, features: %s\n", r.model_id(),
                               r.model_version(), 100 * r.cv_mape(), absl::StrJoin(r.features(), ", "));
  if (r.has_memory()) {
    std::cout << absl::StrFormat("peak memory %s (%s .. %s), needs %s of %s (%s)\n",
                                 GiB(r.memory().peak_bytes()), GiB(r.memory().peak_bytes_low()),
                                 GiB(r.memory().peak_bytes_high()),
                                 GiB(r.memory().required_bytes()),
                                 r.memory().device_bytes() > 0 ? GiB(r.memory().device_bytes())
                                                               : "unknown",
                                 r.memory().method());
  }
  if (!r.extrapolated_features().empty()) {
    std::cout << "extrapolating beyond the training range of: "
              << absl::StrJoin(r.extrapolated_features(), ", ") << "\n";
  }
  if (r.has_parallel()) {
    const v1::ParallelEstimate& p = r.parallel();
    std::cout << absl::StrFormat(
        "%d GPUs (%s): compute %.3f ms (recompute %.3f), "
        "bubble %.3f, tensor all-reduce %.3f, pipeline sends %.3f, gradient all-reduce %.3f "
        "exposed of %.3f (%d buckets), optimizer %.3f\n",
        p.gpus(), p.layout(), p.compute_ms(), p.recompute_ms(), p.bubble_ms(),
        p.tp_comm_ms(), p.pp_comm_ms(), p.dp_exposed_ms(), p.dp_comm_ms(), p.dp_buckets(),
        p.optimizer_ms());
    constexpr double kGiBytes = 1 << 30;
    std::cout << absl::StrFormat(
        "memory per GPU: %.2f GiB needed, %.2f GiB allocated (weights %.2f, gradients %.2f, "
        "optimizer %.2f, 16-bit copies %.2f, gathered %.2f, buckets %.2f, activations %.2f)\n",
        p.memory_required_bytes() / kGiBytes, p.memory_total_bytes() / kGiBytes,
        p.memory_parameters_bytes() / kGiBytes, p.memory_gradients_bytes() / kGiBytes,
        p.memory_optimizer_bytes() / kGiBytes, p.memory_amp_copies_bytes() / kGiBytes,
        p.memory_gathered_bytes() / kGiBytes, p.memory_buckets_bytes() / kGiBytes,
        p.memory_activations_bytes() / kGiBytes);
    for (const auto& [what, link] : {std::pair{"tensor", p.tp_link()}, std::pair{"data", p.dp_link()},
                                     std::pair{"pipeline", p.pp_link()}}) {
      if (!link.empty()) std::cout << absl::StrFormat("%s-parallel link: %s\n", what, link);
    }
  }
}

// `path` as written in `file`: relative paths are relative to its directory.
std::string RelativeTo(const std::string& file, const std::string& path) {
  if (path.front() == '/') return path;
  const size_t slash = file.rfind('/');
  return slash == std::string::npos ? path : file.substr(0, slash + 1) + path;
}

// jobs.csv: a header naming some of family, params, batch_size, precision,
// phase, optimizer, loop, node, gpu, samples, epochs, iterations, model, and
// hf_config,seq_len or torchvision,image instead of family,params, or op
// (and the layout: data_parallel, tensor_parallel, pipeline_parallel,
// micro_batches, zero, activation_checkpointing, framework)
// (an operation family; a row's empty family and op cells are no choice);
// a row per query. Read by the same CSV reader as profile imports (quoted
// fields, CRLF, a UTF-8 byte-order mark, bounded lines); flags fill columns
// the file lacks.
class BatchFile {
 public:
  BatchFile(const PredictFlags& flags, std::istream& in) : flags_(flags), reader_(in) {}

  // Reads and checks the header.
  std::optional<CliError> Open() {
    const std::string& name = flags_.batch_file;
    absl::StatusOr<bool> has_header = reader_.Next(header_);
    if (!has_header.ok()) {
      return CliError{kExitFailure, absl::StrCat(name, ": ", has_header.status().message())};
    }
    if (!*has_header) return CliError{kExitFailure, absl::StrCat(name, ": no queries (an empty file?)")};
    static const std::set<std::string> kColumns = {
        "family",     "params",  "batch_size", "precision", "phase",      "optimizer",
        "loop",       "node",       "gpu",     "samples",    "epochs",    "iterations", "model",
        "hf_config",  "seq_len", "torchvision", "image",    "op",
        "data_parallel", "tensor_parallel", "pipeline_parallel", "micro_batches", "zero",
        "activation_checkpointing", "framework"};
    for (std::string& column : header_) {
      column = std::string(absl::StripAsciiWhitespace(column));
      if (!kColumns.contains(column)) {
        return CliError{kExitFailure,
                        absl::StrCat(name, ": unknown column '", Printable(column),
                                     "' (columns: ", absl::StrJoin(kColumns, ","), ")")};
      }
    }
    has_family_ = std::find(header_.begin(), header_.end(), "family") != header_.end();
    has_op_ = std::find(header_.begin(), header_.end(), "op") != header_.end();
    return std::nullopt;
  }

  // The next row's query into `query`; false at the end of the file. A row
  // that is no query is an error naming its line.
  absl::StatusOr<bool> Next(v1::PredictRequest* query) {
    const std::string& name = flags_.batch_file;
    absl::StatusOr<bool> more = reader_.Next(cells_);
    if (!more.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(name, ":", reader_.line_number(), ": ", more.status().message()));
    }
    if (!*more) return false;
    const int64_t number = reader_.line_number();
    if (cells_.size() != header_.size()) {
      return absl::InvalidArgumentError(absl::StrCat(name, ":", number, ": expected ",
                                                     header_.size(), " fields, got ", cells_.size()));
    }
    PredictFlags f = flags_;
    for (size_t i = 0; i < header_.size(); ++i) {
      const std::string& c = header_[i];
      const std::string v(absl::StripAsciiWhitespace(cells_[i]));
      bool ok = true;
      if (c == "family") f.family = v;
      else if (c == "op") f.op = v;
      else if (c == "params") f.params = v.empty() ? std::vector<std::string>{} : std::vector{v};
      else if (c == "batch_size") ok = f.batch_given = absl::SimpleAtoi(v, &f.batch);
      else if (c == "precision") f.precision = v;
      else if (c == "phase") f.phase = v;
      else if (c == "optimizer") f.optimizer = v;
      else if (c == "loop") f.loop = v.empty() ? flags_.loop : v;
      else if (c == "node") f.node = v;
      else if (c == "gpu") f.gpu = v;
      else if (c == "samples") ok = v.empty() || absl::SimpleAtoi(v, &f.samples);
      else if (c == "epochs") ok = v.empty() || absl::SimpleAtoi(v, &f.epochs);
      else if (c == "iterations") ok = v.empty() || absl::SimpleAtoi(v, &f.iterations);
      else if (c == "model") f.model = v;
      else if (c == "hf_config") f.hf_config = v.empty() ? v : RelativeTo(flags_.batch_file, v);
      else if (c == "torchvision") f.torchvision = v;
      else if (c == "seq_len") ok = v.empty() || (absl::SimpleAtoi(v, &f.seq_len) && f.seq_len > 0);
      else if (c == "image") ok = v.empty() || (absl::SimpleAtoi(v, &f.image) && f.image > 0);
      else if (c == "data_parallel") ok = v.empty() || absl::SimpleAtoi(v, &f.data_parallel);
      else if (c == "tensor_parallel") ok = v.empty() || absl::SimpleAtoi(v, &f.tensor_parallel);
      else if (c == "pipeline_parallel") {
        ok = v.empty() || absl::SimpleAtoi(v, &f.pipeline_parallel);
      } else if (c == "micro_batches") ok = v.empty() || absl::SimpleAtoi(v, &f.micro_batches);
      else if (c == "zero") ok = v.empty() || absl::SimpleAtoi(v, &f.zero);
      else if (c == "activation_checkpointing") {
        ok = v.empty() || absl::SimpleAtob(v, &f.activation_checkpointing);
      } else if (c == "framework" && !v.empty()) f.framework = v;
      if (!ok) {
        return absl::InvalidArgumentError(absl::StrCat(
            name, ":", number, ": ", c, " '", Printable(v), "' is not an integer in range"));
      }
    }
    f.job_given = f.samples != 0 || f.epochs != 0 || f.iterations != 0;
    // A row's operation replaces the flags' model family, and the reverse.
    if (has_op_ && !f.op.empty() && !has_family_) f.family.clear();
    if (has_family_ && !f.family.empty() && !has_op_) f.op.clear();
    if (auto error = BuildQuery(f, query)) {
      return absl::InvalidArgumentError(absl::StrCat(name, ":", number, ": ", error->message));
    }
    return true;
  }

  int64_t line_number() const { return reader_.line_number(); }

 private:
  const PredictFlags& flags_;
  models::CsvReader reader_;
  std::vector<std::string> header_;
  std::vector<std::string> cells_;
  bool has_family_ = false;
  bool has_op_ = false;
};

// Queries per PredictBatch message: answers stream back a message at a
// time, so the CLI holds one message's queries and results, whatever the
// file's length.
constexpr int kQueriesPerMessage = 1000;

// The file is read twice: once to check every row (a bad row answers
// nothing), then to send the queries a message at a time and print each
// message's results as they come.
std::optional<CliError> RunBatch(ClientContext& context, const PredictFlags& flags) {
  std::ifstream in(flags.batch_file);
  if (!in) return CliError{kExitFailure, absl::StrCat("cannot read ", flags.batch_file)};
  int64_t queries = 0;
  {
    BatchFile file(flags, in);
    if (auto error = file.Open()) return error;
    v1::PredictRequest query;
    while (true) {
      absl::StatusOr<bool> more = file.Next(&query);
      if (!more.ok()) return CliError{kExitFailure, std::string(more.status().message())};
      if (!*more) break;
      ++queries;
    }
  }
  if (queries == 0) {
    return CliError{kExitFailure, absl::StrCat(flags.batch_file, ": no queries after the header")};
  }
  in.clear();
  in.seekg(0);
  BatchFile file(flags, in);
  if (auto error = file.Open()) return error;

  grpc::ClientContext call;
  absl::StatusOr<std::unique_ptr<v1::Predictor::Stub>> stub = Stub(context);
  if (!stub.ok()) return Failed(stub.status());
  auto stream = (*stub)->PredictBatch(&call);
  Table table({"LINE", "FAMILY", "GPU", "MS/ITER", "LOW", "HIGH", "JOB", "ERROR"});
  int64_t answered = 0;
  int64_t failed = 0;
  v1::PredictBatchRequest request;
  // The compact layout: each distinct answer sent once (proto/batch_results.h).
  request.set_compact(true);
  std::vector<int64_t> lines;
  v1::PredictBatchResponse response;
  v1::PredictResult result;
  bool done = false;
  while (!done) {
    request.clear_queries();
    lines.clear();
    while (request.queries_size() < kQueriesPerMessage) {
      absl::StatusOr<bool> more = file.Next(request.add_queries());
      if (!more.ok() || !*more) {
        request.mutable_queries()->RemoveLast();
        // The file changed since it was checked.
        if (!more.ok()) return CliError{kExitFailure, std::string(more.status().message())};
        done = true;
        break;
      }
      lines.push_back(file.line_number());
    }
    if (request.queries_size() == 0) break;
    if (!stream->Write(request) || !stream->Read(&response)) break;
    if (absl::Status readable = proto::ValidateBatchResponse(response); !readable.ok()) {
      call.TryCancel();
      stream->Finish().IgnoreError();
      return CliError{kExitFailure, std::string(readable.message())};
    }
    const int count = proto::BatchResultCount(response);
    for (int i = 0; i < count && i < static_cast<int>(lines.size()); ++i) {
      proto::BatchResult(response, i, &result);
      const v1::PredictRequest& q = request.queries(i);
      ++answered;
      if (result.code() != 0) ++failed;
      if (context.Structured()) {
        context.Out().Record(context.ToJson(result));
      } else if (result.code() != 0) {
        table.AddRow({absl::StrCat(lines[i]), q.workload().family(), "", "", "", "", "",
                      result.error()});
      } else {
        const auto& p = result.prediction();
        table.AddRow({absl::StrCat(lines[i]),
                      p.workload().family().empty() ? q.workload().family() : p.workload().family(),
                      p.gpu_model(), absl::StrFormat("%.3f", p.iteration_ms()),
                      absl::StrFormat("%.3f", p.iteration_ms_low()),
                      absl::StrFormat("%.3f", p.iteration_ms_high()),
                      p.iterations() > 0 ? Duration(p.job_seconds()) : "", ""});
      }
    }
    if (context.output == OutputFormat::kTable) table.Flush(std::cout, context.TableWidth());
    std::cout.flush();
  }
  stream->WritesDone();
  grpc::Status status = stream->Finish();
  if (!status.ok()) return CallFailed(status);
  if (answered != queries) {
    return CliError{kExitFailure, absl::StrCat("the server answered ", answered, " of ", queries,
                                               " queries")};
  }
  if (failed > 0) return CliError{kExitPartial, absl::StrCat(failed, " of ", answered, " queries failed")};
  return std::nullopt;
}

std::optional<CliError> RunPredict(ClientContext& context, const PredictFlags& flags) {
  if (!flags.batch_file.empty()) return RunBatch(context, flags);
  if (auto error = CheckFamilyFlag(flags)) return error;
  if (!flags.sweeps.empty()) return RunSweep(context, flags);
  v1::PredictRequest request;
  if (auto error = BuildQuery(flags, &request)) return error;
  grpc::ClientContext call;
  context.SetDeadline(call);
  v1::PredictResponse response;
  absl::StatusOr<std::unique_ptr<v1::Predictor::Stub>> stub = Stub(context);
  if (!stub.ok()) return Failed(stub.status());
  grpc::Status status = (*stub)->Predict(&call, request, &response);
  if (!status.ok()) return CallFailed(status);
  if (context.Structured()) {
    // The cost beside the server's fields, as in the table.
    nlohmann::json answer = context.ToJson(response);
    std::optional<JobCost> cost = CostOfPrediction(response);
    answer["cost"] = cost.has_value() ? CostJson(*cost) : nlohmann::json();
    context.Out().Document(answer);
  } else {
    PrintPrediction(context, request, response);
  }
  return std::nullopt;
}

struct EvaluateFlags {
  SelectionFlags selection;
  std::string split = "gpu";
  bool split_given = false;
  int64_t size_threshold = 0;
  std::vector<std::string> train_gpus;  // --train-gpu: the transfer protocol
  std::vector<std::string> test_gpus;
  std::string held_out_gpu;
  int limit = 10;
  std::string report;
};

// The per-level line under the headline: bias and interval coverage beside
// the MAPE.
std::string LevelDetail(const char* what, int64_t rows, double bias, double mean_bias,
                        double coverage) {
  if (rows == 0) return "";
  return absl::StrFormat(
      "%s: bias %+.1f%% (median signed error; mean %+.1f%%), 10-90%% interval coverage %.1f%%\n",
      what, 100 * bias, 100 * mean_bias, 100 * coverage);
}

std::optional<CliError> RunEvaluate(ClientContext& context, const EvaluateFlags& flags) {
  v1::EvaluateRequest request;
  if (auto error = flags.selection.Fill(request.mutable_selection(), request.mutable_options())) {
    return error;
  }
  std::string held_out_gpu = flags.held_out_gpu;
  if (auto error = ResolveGpuFlag("--held-out-gpu", held_out_gpu)) return error;
  const bool transfer = !flags.train_gpus.empty() || !flags.test_gpus.empty();
  if (transfer && flags.split_given && flags.split != "train-test") {
    return CliError{kExitUsage, absl::StrCat("--train-gpu and --test-gpu are their own split, not --split ",
                                             flags.split)};
  }
  if ((transfer || flags.split == "train-test") &&
      (flags.train_gpus.empty() || flags.test_gpus.empty())) {
    return CliError{kExitUsage, "the train/test protocol needs --train-gpu and --test-gpu"};
  }
  const std::string split = transfer ? "train-test" : flags.split;
  // sizes: each family's largest size held out, unless a global threshold
  // on inner modules is given.
  request.set_split(transfer                     ? v1::SPLIT_TRAIN_TEST_GPUS
                    : split == "kfold"           ? v1::SPLIT_K_FOLD
                    : split != "sizes"           ? v1::SPLIT_LEAVE_ONE_GPU_OUT
                    : flags.size_threshold > 0   ? v1::SPLIT_HELD_OUT_LARGER_SIZES
                                                 : v1::SPLIT_LARGEST_SIZE_PER_FAMILY);
  request.set_size_threshold(flags.size_threshold);
  if (auto error = AddGpus("--train-gpu", flags.train_gpus, request.mutable_train_gpus())) {
    return error;
  }
  if (auto error = AddGpus("--test-gpu", flags.test_gpus, request.mutable_test_gpus())) {
    return error;
  }
  grpc::ClientContext call;
  call.set_deadline(std::chrono::system_clock::now() +
                    std::chrono::seconds(std::max<int64_t>(900, context.timeout_s)));
  v1::EvaluateResponse response;
  absl::StatusOr<std::unique_ptr<v1::Predictor::Stub>> stub = Stub(context);
  if (!stub.ok()) return Failed(stub.status());
  grpc::Status status = (*stub)->Evaluate(&call, request, &response);
  if (!status.ok()) return CallFailed(status);
  if (!flags.report.empty()) {
    std::ofstream out(flags.report);
    if (!out) return CliError{kExitFailure, absl::StrCat("cannot write ", flags.report)};
    out << RenderEvaluationHtml(response, split);
    // The page holds no raw data; the full report goes beside it.
    const std::string json_path = flags.report + ".json";
    std::ofstream json(json_path);
    if (!json) return CliError{kExitFailure, absl::StrCat("cannot write ", json_path)};
    json << response.report_json() << "\n";
  }
  if (context.Structured()) {
    context.Out().Document(nlohmann::json::parse(response.report_json(), nullptr,
                                                 /*allow_exceptions=*/false));
    return std::nullopt;
  }
  // A level with no held-out rows was not evaluated (level 1 under held-out
  // sizes): its MAPE field is a zero, not a result.
  auto level = [](const char* what, int64_t rows, double mape) {
    return rows > 0 ? absl::StrFormat("%s MAPE %.1f%% (%d held-out rows)", what, 100 * mape, rows)
                    : absl::StrFormat("%s not evaluated", what);
  };
  std::cout << absl::StrFormat(
      "split %s: %s, %s\n", split,
      level("level-1 (operations)", response.level1_rows(), response.level1_mape()),
      level("level-2 (workloads)", response.level2_rows(), response.level2_mape()));
  if (transfer) {
    std::cout << "trained on " << absl::StrJoin(response.train_gpus(), ", ")
              << "; held out (predicted from their spec sheets): "
              << absl::StrJoin(response.test_gpus(), ", ") << "\n";
  } else if (split == "gpu") {
    std::cout << "each GPU held out in turn, predicted by a model fitted on the others\n";
  }
  std::cout << LevelDetail("level-1 (operations)", response.level1_rows(), response.level1_bias(),
                           response.level1_mean_bias(), response.level1_coverage())
            << LevelDetail("level-2 (workloads)", response.level2_rows(), response.level2_bias(),
                           response.level2_mean_bias(), response.level2_coverage());
  Table groups({"LEVEL", "GROUP", "MAPE", "ROWS", "BIAS", "COVERAGE"});
  auto add = [&groups](const char* kind, const v1::GroupError& g) {
    groups.AddRow({g.level() == 1 ? "1 operations" : "2 workloads", absl::StrCat(kind, " ", g.group()),
                   absl::StrFormat("%.1f%%", 100 * g.mape()), absl::StrCat(g.rows()),
                   absl::StrFormat("%+.1f%%", 100 * g.bias()),
                   absl::StrFormat("%.1f%%", 100 * g.coverage())});
  };
  for (const auto& g : response.per_gpu()) add("gpu", g);
  for (const auto& g : response.per_class()) add("class", g);
  for (const auto& g : response.per_family()) add("family", g);
  for (const auto& g : response.per_phase()) add("phase", g);
  for (const auto& g : response.per_precision()) add("precision", g);
  groups.Print(std::cout, context.TableWidth());
  std::cout << "BIAS: median (predicted - measured) / measured; COVERAGE: share of measured "
               "times inside the predicted 10-90% interval (80% is honest)\n";
  if (flags.limit > 0) {
    // A spread of training workloads on the chosen GPU: predicted against measured.
    std::vector<const v1::EvaluatedPoint*> points;
    for (const auto& p : response.points()) {
      if (p.level() == 2 && (held_out_gpu.empty() || p.gpu_model() == held_out_gpu) &&
          p.workload_key().find("/train/") != std::string::npos) {
        points.push_back(&p);
      }
    }
    std::sort(points.begin(), points.end(),
              [](auto* a, auto* b) { return a->measured_ms() < b->measured_ms(); });
    Table table({"GPU", "WORKLOAD", "MEASURED MS", "PREDICTED MS", "ERROR"});
    const size_t n = std::min<size_t>(flags.limit, points.size());
    for (size_t i = 0; i < n; ++i) {
      const v1::EvaluatedPoint& p = *points[n <= 1 ? 0 : i * (points.size() - 1) / (n - 1)];
      table.AddRow({p.gpu_model(), p.workload_key(), absl::StrFormat("%.3f", p.measured_ms()),
                    absl::StrFormat("%.3f", p.predicted_ms()),
                    absl::StrFormat("%+.1f%%", 100 * (p.predicted_ms() - p.measured_ms()) / p.measured_ms())});
    }
    if (n > 0) {
      std::cout << "\npredicted vs measured (training steps"
                << (held_out_gpu.empty() ? "" : " on " + held_out_gpu + ", held out") << "):\n";
      table.Print(std::cout, context.TableWidth());
    } else if (!held_out_gpu.empty()) {
      std::cout << "\nno training steps of " << Printable(held_out_gpu)
                << " among the held-out rows (--held-out-gpu)\n";
    }
  }
  if (!flags.report.empty()) {
    std::cout << "report written to " << flags.report << " (data: " << flags.report << ".json)\n";
  }
  return std::nullopt;
}

}  // namespace

void RegisterPredictorCommands(CLI::App& app, ClientContext& context, Dispatch& dispatch) {
  auto fit = std::make_shared<FitFlags>();
  CLI::App* fit_cmd = app.add_subcommand("fit", "Fit the two-level model on stored profiles");
  fit_cmd->add_option("--name", fit->name, "Model name (default: default)");
  fit->selection.AddTo(fit_cmd);
  fit_cmd->add_flag("--calibrate", fit->calibrate,
                    "Let the imported whole-model profiles (your measured runs) calibrate their "
                    "GPU, family and phase: answers there move toward them, intervals narrow");
  fit_cmd->callback([&context, &dispatch, fit] {
    dispatch.action = [&context, fit] { return RunFit(context, *fit); };
  });

  auto predict = std::make_shared<PredictFlags>();
  CLI::App* p = app.add_subcommand("predict", "Predict iteration and job time of a workload");
  constexpr char kRequired[] = "Required (or --batch-file)";
  constexpr char kWorkload[] = "Workload";
  p->add_option("--gpu", predict->gpu,
                "Catalog GPU to predict for, by name or unique prefix (perfcast gpus list); or "
                "--node")
      ->group(kRequired);
  p->add_option("--node", predict->node, "Registered node to predict for; or --gpu")
      ->group(kRequired);
  p->add_option("--family", predict->family,
                "Model family: lstm, cnn, stgcn, resnet, transformer, dlrm, decoder, bert, vit, "
                "resnet_imagenet; or --hf-config, --torchvision")
      ->group(kRequired);
  p->add_option("--op", predict->op,
                "An operation instead of a model: gemm, conv2d, attention, sdpa, layernorm, "
                "softmax, elementwise, ... (models/descriptor.h) with its shape in --param; one "
                "call, priced by its class's level-1 model (--batch 1, one call by default)")
      ->group(kWorkload);
  p->add_option("--hf-config", predict->hf_config,
                "A Hugging Face config.json (gpt2, opt, llama, mistral, bert) instead of --family")
      ->check(CLI::ExistingFile)
      ->group(kWorkload);
  p->add_option("--torchvision", predict->torchvision,
                "A torchvision model (resnet18..resnet152, vit_b_16, ...) instead of --family")
      ->group(kWorkload);
  p->add_option("--seq-len", predict->seq_len,
                "Tokens per sample with --hf-config (default: the model's maximum)")
      ->group(kWorkload)
      ->check(DecimalInteger())
      ->check(CLI::PositiveNumber);
  p->add_option("--image", predict->image, "Image size in pixels with --torchvision (default: 224)")
      ->group(kWorkload)
      ->check(DecimalInteger())
      ->check(CLI::PositiveNumber);
  p->add_option("--batch", predict->batch, "Batch size (samples per iteration)")->group(kRequired)
      ->check(DecimalInteger());
  p->add_option("--samples", predict->samples, "Samples per epoch, with --epochs; or --iterations")
      ->group(kRequired)
      ->check(DecimalInteger());
  p->add_option("--epochs", predict->epochs, "Epochs, with --samples")->group(kRequired)
      ->check(DecimalInteger());
  p->add_option("--iterations", predict->iterations, "Iterations (instead of samples x epochs)")
      ->group(kRequired)
      ->check(DecimalInteger());
  p->add_option("--param", predict->params, "Architecture parameter name=value (repeatable)")
      ->group(kWorkload);
  p->add_option("--precision", predict->precision, kPrecisionHelp)
      ->capture_default_str()
      ->group(kWorkload);
  p->add_option("--phase", predict->phase, kPhaseHelp)
      ->capture_default_str()
      ->group(kWorkload);
  p->add_option("--optimizer", predict->optimizer, kOptimizerHelp)
      ->group(kWorkload);
  p->add_option("--loop", predict->loop, kLoopHelp)->capture_default_str()->group(kWorkload);
  p->add_option("--model", predict->model, "Model name (default: default)");
  p->add_flag("--local", context.local, kLocalHelp);
  p->add_option("--data-parallel", predict->data_parallel,
                "Data-parallel replicas (--batch is then the global batch)");
  p->add_option("--tensor-parallel", predict->tensor_parallel,
                "Megatron tensor-parallel degree (divides the attention heads)");
  p->add_option("--pipeline-parallel", predict->pipeline_parallel,
                "Pipeline stages of contiguous layers (1F1B)");
  p->add_option("--micro-batches", predict->micro_batches,
                "Micro-batches per replica and step");
  p->add_option("--zero", predict->zero,
                "ZeRO stage over the data-parallel replicas: 0, 1 (optimizer states), 2 (+ "
                "gradients; FSDP SHARD_GRAD_OP), 3 (+ parameters; FSDP FULL_SHARD)");
  p->add_flag("--activation-checkpointing", predict->activation_checkpointing,
              "Recompute each layer's activations in backward");
  p->add_option("--framework", predict->framework,
                "What runs the layout: pytorch (DDP, FSDP2, DTensor TP, pipelining), megatron, "
                "deepspeed")
      ->capture_default_str();
  p->add_option("--batch-file", predict->batch_file,
                "CSV of queries, one per row; header columns: family, params, batch_size, "
                "precision, phase, optimizer, loop, node, gpu, samples, epochs, iterations, model, "
                "or hf_config,seq_len / torchvision,image for family,params, or op (an "
                "operation, as --op) for family; layout: data_parallel, tensor_parallel, "
                "pipeline_parallel, micro_batches, zero, activation_checkpointing, framework "
                "(flags fill the columns a file lacks)")
      ->check(CLI::ExistingFile);
  p->add_option("--sweep", predict->sweeps,
                absl::StrCat("What-if grid: key=v1,v2,... (repeatable; keys: ", kSweepKeys, ")"));
  p->callback([&context, &dispatch, predict, p] {
    predict->batch_given = p->count("--batch") > 0;
    predict->job_given =
        p->count("--samples") + p->count("--epochs") + p->count("--iterations") > 0;
    dispatch.action = [&context, predict] { return RunPredict(context, *predict); };
  });

  CLI::App* models = app.add_subcommand("models", "List or show fitted models");
  models->require_subcommand(1);
  CLI::App* list = models->add_subcommand("list", "All fitted models, newest first");
  list->callback([&context, &dispatch] {
    dispatch.action = [&context]() -> std::optional<CliError> {
      grpc::ClientContext call;
      context.SetDeadline(call);
      v1::ListModelsResponse response;
      absl::StatusOr<std::unique_ptr<v1::Predictor::Stub>> stub = Stub(context);
      if (!stub.ok()) return Failed(stub.status());
      grpc::Status status = (*stub)->ListModels(&call, v1::ListModelsRequest(), &response);
      if (!status.ok()) return CallFailed(status);
      PrintModels(context, {response.models().begin(), response.models().end()},
                  /*stream=*/true);
      return std::nullopt;
    };
  });
  auto model_id = std::make_shared<int64_t>(0);
  auto model_name = std::make_shared<std::string>();
  CLI::App* get = models->add_subcommand(
      "get", "One model with its full detail, as JSON (indented; one line with -o json)");
  get->add_option("--id", *model_id, "Model id (default: the latest of --name)")
      ->check(DecimalInteger());
  get->add_option("--name", *model_name, "Model name (default: default)");
  get->callback([&context, &dispatch, model_id, model_name] {
    dispatch.action = [&context, model_id, model_name]() -> std::optional<CliError> {
      v1::GetModelRequest request;
      request.set_id(*model_id);
      request.set_name(*model_name);
      grpc::ClientContext call;
      context.SetDeadline(call);
      v1::GetModelResponse response;
      absl::StatusOr<std::unique_ptr<v1::Predictor::Stub>> stub = Stub(context);
      if (!stub.ok()) return Failed(stub.status());
      grpc::Status status = (*stub)->GetModel(&call, request, &response);
      if (!status.ok()) return CallFailed(status);
      // The summary's fields and, under "detail", the fitted model itself;
      // indented for reading unless -o json asks for one line.
      nlohmann::json model = nlohmann::json::parse(ProtoJson(response.model()));
      nlohmann::json detail = nlohmann::json::parse(response.model().detail_json(), nullptr,
                                                    /*allow_exceptions=*/false);
      model.erase("detail_json");
      model["detail"] = detail.is_discarded() ? nlohmann::json(response.model().detail_json())
                                              : std::move(detail);
      if (context.Structured()) {
        context.Out().Document(model);
      } else {
        std::cout << model.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
      }
      return std::nullopt;
    };
  });

  auto evaluate = std::make_shared<EvaluateFlags>();
  CLI::App* e = app.add_subcommand("evaluate", "Cross-validate on held-out GPUs, sizes or folds");
  evaluate->selection.AddTo(e);
  e->add_option("--split", evaluate->split,
                "gpu (leave one GPU out), sizes (each family's largest size held out, or all "
                "above --size-threshold), kfold, train-test (--train-gpu / --test-gpu imply it)")
      ->check(CLI::IsMember({"gpu", "sizes", "kfold", "train-test"}))
      ->capture_default_str();
  e->add_option("--train-gpu", evaluate->train_gpus,
                "Transfer protocol: fit on these GPU models' profiles only (repeatable, or a "
                "comma list)")
      ->delimiter(',');
  e->add_option("--test-gpu", evaluate->test_gpus,
                "Transfer protocol: predict these GPU models' profiles from their spec sheets "
                "(repeatable, or a comma list)")
      ->delimiter(',');
  e->add_option("--size-threshold", evaluate->size_threshold,
                "sizes: train on inner modules <= this in every family (default: per family)")
      ->check(DecimalInteger());
  e->add_option("--held-out-gpu", evaluate->held_out_gpu, "Show predicted vs measured for this GPU");
  e->add_option("--limit", evaluate->limit, "Rows of predicted vs measured to print")->capture_default_str();
  e->add_option("--report", evaluate->report,
                "Write a self-contained HTML report here (and its data to REPORT.json)");
  e->callback([&context, &dispatch, evaluate, e] {
    evaluate->split_given = e->count("--split") > 0;
    dispatch.action = [&context, evaluate] { return RunEvaluate(context, *evaluate); };
  });
}

}  // namespace perfcast::client
