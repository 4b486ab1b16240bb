// perfcast recommend: which GPU (and how many) for one job.
#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <iostream>
#include <memory>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "client/command.h"
#include "client/gpu_counts.h"
#include "client/job_cost.h"
#include "client/predict_query.h"
#include "client/proto_json.h"
#include "client/recommend_rows.h"
#include "client/report_html.h"
#include "client/table.h"
#include "models/gpu_prices.h"
#include "perfcast/v1/predictor.grpc.pb.h"

namespace perfcast::client {
namespace {

struct RecommendFlags {
  PredictFlags job;
  std::vector<std::string> gpus;
  std::vector<std::string> nodes;
  bool catalog_only = false;
  bool nodes_only = false;
  std::vector<std::string> counts;
  std::string framework = "pytorch";
  bool all_layouts = false;
  int top = 0;
  std::string deadline;
  double budget = 0;
  std::string rank_by = "cost";
  std::string prices;
  std::string report;
  bool per_node = false;
};

// "3600", "90s", "45m", "4h", "2d" -> seconds. Nullopt when malformed.
std::optional<double> ParseDeadline(std::string text) {
  text = absl::AsciiStrToLower(text);
  double unit = 1;
  if (!text.empty() && std::string("smhd").find(text.back()) != std::string::npos) {
    unit = text.back() == 's' ? 1 : text.back() == 'm' ? 60 : text.back() == 'h' ? 3600 : 86400;
    text.pop_back();
  }
  double value = 0;
  if (!absl::SimpleAtod(text, &value) || !(value > 0) || !std::isfinite(value)) return std::nullopt;
  return value * unit;
}

std::optional<CliError> ReadPrices(const std::string& path, v1::RecommendRequest* request) {
  std::ifstream in(path);
  if (!in) return CliError{kExitFailure, absl::StrCat("cannot read ", path)};
  std::stringstream text;
  text << in.rdbuf();
  absl::StatusOr<models::PriceTable> table = models::PriceTable::ParseCsv(text.str(), path);
  if (!table.ok()) return CliError{kExitFailure, std::string(table.status().message())};
  for (const models::GpuPrice& p : table->prices()) {
    v1::GpuPrice* out = request->add_prices();
    out->set_gpu_model(p.gpu);
    out->set_usd_per_gpu_hour(p.usd_per_gpu_hour);
    out->set_provider(p.provider);
    out->set_offer(p.offer);
    out->set_as_of(p.as_of);
    out->set_kind(p.kind);
    out->set_source(p.source);
  }
  return std::nullopt;
}

std::string Range(double mid, double lo, double hi, const char* format) {
  return absl::StrCat(absl::StrFormat(format, mid), " (", absl::StrFormat(format, lo), "..",
                      absl::StrFormat(format, hi), ")");
}

models::GpuPrice FromProto(const v1::GpuPrice& p) {
  return {.gpu = p.gpu_model(),
          .usd_per_gpu_hour = p.usd_per_gpu_hour(),
          .provider = p.provider(),
          .offer = p.offer(),
          .as_of = p.as_of(),
          .kind = p.kind(),
          .source = p.source()};
}

// The cells of one candidate, shared by both tables.
std::string Verdict(const v1::Candidate& c) {
  return c.recommended() ? "recommended" : absl::StrCat(c.excluded_by(), ": ", c.reason());
}

std::string JobTime(const v1::Candidate& c, TimeUnit unit) {
  if (!c.predicted()) return "-";
  return absl::StrCat(InUnit(c.job_seconds(), unit), " (", InUnit(c.job_seconds_low(), unit),
                      "..", InUnit(c.job_seconds_high(), unit), ")");
}

std::string Cost(const v1::Candidate& c) {
  if (!c.predicted() || !c.priced()) return "-";
  return Range(c.cost_usd(), c.cost_usd_low(), c.cost_usd_high(), "%.2f");
}

std::string Energy(const v1::Candidate& c) {
  if (!c.predicted() || c.board_power_w() <= 0) return "-";
  return Range(c.energy_kwh(), c.energy_kwh_low(), c.energy_kwh_high(), "%.3g");
}

std::string Power(const v1::Candidate& c) {
  if (c.board_power_w() <= 0) return "-";
  // TDP times the utilisation the agents' power readings give this family,
  // or a default.
  return absl::StrFormat("%.0f W %s", c.board_power_w(),
                         c.power_measured() ? "tdp*measured-util" : "tdp*default");
}

std::string Memory(const v1::Candidate& c) {
  return c.memory().device_bytes() > 0
             ? absl::StrCat(GiB(c.memory().required_bytes()), "/", GiB(c.memory().device_bytes()))
             : GiB(c.memory().required_bytes());
}

// The table of every candidate (--per-node), as the server ranked them.
void PrintEveryCandidate(const ClientContext& context, const v1::RecommendResponse& r,
                         TimeUnit unit) {
  Table table({"#", "TARGET", "GPUS", "LAYOUT", "VERDICT",
               absl::StrCat("JOB TIME ", unit.name, " (P10..P90)"), "COST USD", "ENERGY KWH",
               "POWER", "MEMORY", "DISTANCE"});
  for (const v1::Candidate& c : r.candidates()) {
    table.AddRow({absl::StrCat(c.rank()), c.target(), absl::StrCat(c.gpu_count()),
                  c.layout_name(), Verdict(c), JobTime(c, unit), Cost(c), Energy(c), Power(c),
                  Memory(c), DistanceCell(c.distance())});
  }
  table.Print(std::cout, context.TableWidth());
}

// The best `per_model` rows of each GPU model (0: every row); rows are per
// GPU model, count and layout (see recommend_rows.h), in the response's order.
void PrintAtAGlance(const ClientContext& context, const v1::RecommendResponse& r, TimeUnit unit,
                    int per_model) {
  Table table({"#", "GPU", "GPUS", "LAYOUT", "ANSWERED FOR", "VERDICT",
               absl::StrCat("JOB TIME ", unit.name, " (P10..P90)"), "NODE SPREAD", "COST USD",
               "ENERGY KWH", "POWER", "MEMORY", "DISTANCE"});
  int index = 0;
  std::map<std::string, int> shown_of_model;
  for (const RecommendRow& row : SummariseCandidates(r)) {
    const v1::Candidate& c = *row.shown;
    if (per_model > 0 && ++shown_of_model[c.gpu_model()] > per_model) continue;
    std::string target = "catalog (spec sheet)";
    std::string verdict = Verdict(c);
    std::string spread = "-";
    if (row.nodes == 1) {
      target = c.target();
    } else if (row.nodes > 1) {
      target = absl::StrCat(row.nodes, " nodes (median: ", c.target(), ")");
      if (row.recommended > 0 && row.recommended < row.nodes) {
        verdict = absl::StrCat("recommended on ", row.recommended, " of ", row.nodes, " nodes");
      }
      if (row.node_seconds_max > 0) {
        spread = absl::StrCat(InUnit(row.node_seconds_min, unit), "..",
                              InUnit(row.node_seconds_max, unit));
      }
    }
    table.AddRow({absl::StrCat(++index), c.gpu_model(), absl::StrCat(c.gpu_count()),
                  c.layout_name(), target, verdict, JobTime(c, unit), spread, Cost(c), Energy(c),
                  Power(c), Memory(c), DistanceCell(c.distance())});
  }
  table.Print(std::cout, context.TableWidth());
}

void Print(const ClientContext& context, const v1::RecommendResponse& r, bool per_node,
           int per_model) {
  std::cout << absl::StrFormat("%s, %d iterations, ranked by %s", r.workload_key(), r.iterations(),
                               r.rank_by());
  if (r.deadline_seconds() > 0) std::cout << ", deadline " << Duration(r.deadline_seconds());
  if (r.budget_usd() > 0) std::cout << absl::StrFormat(", budget $%.2f", r.budget_usd());
  std::cout << absl::StrFormat(" (model %d v%d)\n", r.model_id(), r.model_version());
  double longest = 0;
  int recommended = 0;
  std::vector<models::GpuPrice> prices;
  for (const v1::Candidate& c : r.candidates()) {
    recommended += c.recommended();
    if (c.predicted()) longest = std::max(longest, c.job_seconds_high());
    if (c.priced()) prices.push_back(FromProto(c.price()));
  }
  const TimeUnit unit = TimeUnitFor(longest);
  per_node ? PrintEveryCandidate(context, r, unit) : PrintAtAGlance(context, r, unit, per_model);
  std::cout << recommended << " of " << r.candidates_size() << " candidates recommended";
  if (r.deadline_seconds() > 0 || r.budget_usd() > 0) {
    std::cout << " (deadline and budget met with >= 90% confidence)";
  }
  std::cout << "\n";
  for (const std::string& note : r.notes()) std::cout << "note: " << note << "\n";
  if (const std::string stale = StalePriceWarning(prices, absl::Now()); !stale.empty()) {
    std::cout << "warning: " << stale << "; pass --prices FILE with current ones\n";
  }
}

std::optional<CliError> RunRecommend(ClientContext& context, const RecommendFlags& flags) {
  if (flags.job.family.empty() && flags.job.hf_config.empty() && flags.job.torchvision.empty()) {
    return CliError{kExitUsage, "recommend needs --family, --hf-config or --torchvision"};
  }
  if (flags.catalog_only && flags.nodes_only) {
    return CliError{kExitUsage, "--catalog-only and --nodes-only exclude each other"};
  }
  if (auto error = CheckFamilyFlag(flags.job)) return error;
  v1::RecommendRequest request;
  if (auto error = BuildWorkload(flags.job, request.mutable_workload())) return error;
  request.mutable_job()->set_samples(flags.job.samples);
  request.mutable_job()->set_epochs(flags.job.epochs);
  request.mutable_job()->set_iterations(flags.job.iterations);
  if (!flags.deadline.empty()) {
    std::optional<double> seconds = ParseDeadline(flags.deadline);
    if (!seconds) {
      return CliError{kExitUsage, absl::StrCat("--deadline '", flags.deadline,
                                               "' is not a duration like 3600, 90m, 4h or 2d")};
    }
    request.set_deadline_seconds(*seconds);
  }
  request.set_budget_usd(flags.budget);
  for (const std::string& g : flags.gpus) request.add_catalog_gpus(g);
  for (const std::string& n : flags.nodes) request.add_node_names(n);
  request.set_catalog_only(flags.catalog_only);
  request.set_nodes_only(flags.nodes_only);
  SetGpuCounts(flags.counts, &request);
  if (flags.framework == "megatron") {
    request.set_framework(v1::FRAMEWORK_MEGATRON);
  } else if (flags.framework == "deepspeed") {
    request.set_framework(v1::FRAMEWORK_DEEPSPEED);
  } else {
    request.set_framework(v1::FRAMEWORK_PYTORCH);
  }
  if (flags.top < 0) {
    return CliError{kExitUsage, absl::StrCat("--top must be >= 1, got ", flags.top)};
  }
  request.set_all_layouts(flags.all_layouts || flags.top > 0);
  request.set_rank_by(flags.rank_by);
  request.set_model_name(flags.job.model);
  if (!flags.prices.empty()) {
    if (auto error = ReadPrices(flags.prices, &request)) return error;
  }
  grpc::ClientContext call;
  context.SetDeadline(call);
  v1::RecommendResponse response;
  absl::StatusOr<std::shared_ptr<grpc::Channel>> channel = context.Channel();
  if (!channel.ok()) return Failed(channel.status());
  grpc::Status status = v1::Predictor::NewStub(*channel)->Recommend(&call, request, &response);
  if (!status.ok()) return CallFailed(status);
  if (!flags.report.empty()) {
    std::ofstream out(flags.report);
    if (!out) return CliError{kExitFailure, absl::StrCat("cannot write ", flags.report)};
    out << RenderRecommendationHtml(response);
    const std::string json_path = absl::StrCat(flags.report, ".json");
    std::ofstream json(json_path);
    if (!json) return CliError{kExitFailure, absl::StrCat("cannot write ", json_path)};
    json << ProtoJson(response) << "\n";
  }
  if (context.output == OutputFormat::kCsv) {
    // A row per candidate: the table's rows with every field.
    for (const v1::Candidate& c : response.candidates()) context.Out().Record(context.ToJson(c));
  } else if (context.Structured()) {
    context.Out().Document(context.ToJson(response));
  } else {
    // By default a GPU model's best row; --top N its N best; --all-layouts every one.
    const int per_model = flags.all_layouts ? 0 : flags.top > 0 ? flags.top : 1;
    Print(context, response, flags.per_node, per_model);
    if (!flags.report.empty()) {
      std::cout << "report written to " << flags.report << " (data: " << flags.report
                << ".json)\n";
    }
  }
  return std::nullopt;
}

}  // namespace

void RegisterRecommendCommands(CLI::App& app, ClientContext& context, Dispatch& dispatch) {
  auto flags = std::make_shared<RecommendFlags>();
  CLI::App* r = app.add_subcommand(
      "recommend", "Rank GPUs (and counts) for one job by time, cost and energy");
  r->add_option("--family", flags->job.family,
                "Model family (see perfcast predict); or --hf-config, --torchvision");
  r->add_option("--hf-config", flags->job.hf_config,
                "A Hugging Face config.json (gpt2, opt, llama, mistral, bert) instead of --family")
      ->check(CLI::ExistingFile);
  r->add_option("--torchvision", flags->job.torchvision,
                "A torchvision model (resnet18..resnet152, vit_b_16, ...) instead of --family");
  r->add_option("--seq-len", flags->job.seq_len,
                "Tokens per sample with --hf-config (default: the model's maximum)");
  r->add_option("--image", flags->job.image, "Image size in pixels with --torchvision (default: 224)");
  r->add_option("--param", flags->job.params, "Architecture parameter name=value (repeatable)");
  r->add_option("--batch", flags->job.batch, "Batch size");
  r->add_option("--precision", flags->job.precision, kPrecisionHelp)
      ->capture_default_str();
  r->add_option("--phase", flags->job.phase, kPhaseHelp)->capture_default_str();
  r->add_option("--optimizer", flags->job.optimizer, kOptimizerHelp);
  r->add_option("--loop", flags->job.loop, kLoopHelp)->capture_default_str();
  r->add_option("--samples", flags->job.samples, "Samples per epoch");
  r->add_option("--epochs", flags->job.epochs, "Epochs");
  r->add_option("--iterations", flags->job.iterations, "Iterations (instead of samples x epochs)");
  r->add_option("--model", flags->job.model, "Model name (default: default)");
  r->add_flag("--local", context.local, kLocalHelp);
  r->add_option("--deadline", flags->deadline, "Finish within: seconds, or 90m, 4h, 2d");
  r->add_option("--budget", flags->budget, "At most this many USD");
  r->add_option("--gpu", flags->gpus, "Only these catalog GPUs (repeatable; default: all)");
  r->add_option("--node", flags->nodes, "Only these registered nodes (repeatable; default: all)");
  r->add_flag("--catalog-only", flags->catalog_only, "Leave registered nodes out");
  r->add_flag("--nodes-only", flags->nodes_only, "Leave catalog GPUs out");
  r->add_option("--gpu-count", flags->counts,
                "GPU counts to consider: 8, 1-64, 1,2,4,8 (repeatable; default 1); each count "
                "searched over every valid layout (data/tensor/pipeline parallelism, ZeRO, "
                "checkpointing, micro-batches) that fits");
  r->add_option("--framework", flags->framework,
                "The software that runs the layouts: pytorch, megatron or deepspeed")
      ->check(CLI::IsMember({"pytorch", "megatron", "deepspeed"}))
      ->capture_default_str();
  r->add_flag("--all-layouts", flags->all_layouts,
              "A row per layout that fits, not only each GPU model's best");
  r->add_option("--top", flags->top, "The N best layouts of each GPU model");
  r->add_option("--rank-by", flags->rank_by, "cost, time or energy")
      ->check(CLI::IsMember({"cost", "time", "energy"}))
      ->capture_default_str();
  r->add_option("--prices", flags->prices,
                "CSV of prices per GPU-hour overriding the shipped table "
                "(gpu,usd_per_gpu_hour,provider,offer,as_of,kind,source)")
      ->check(CLI::ExistingFile);
  r->add_option("--report", flags->report,
                "Write a self-contained HTML report here (and its data to REPORT.json)");
  r->add_flag("--per-node", flags->per_node,
              "A row per candidate (every registered node) rather than each GPU model's best, "
              "its measured nodes summarised by the median and their spread");
  r->callback([&context, &dispatch, flags] {
    dispatch.action = [&context, flags] { return RunRecommend(context, *flags); };
  });
}

}  // namespace perfcast::client
