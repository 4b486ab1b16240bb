// perfcast import FILE... / perfcast export / perfcast compare A B
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "client/atomic_file.h"
#include "client/command.h"
#include "client/importer.h"
#include "client/profile_compare.h"
#include "client/profile_files.h"
#include "client/table.h"
#include "client/text_input.h"
#include "perfcast/v1/node_registry.grpc.pb.h"
#include "perfcast/v1/profile_store.grpc.pb.h"
#include "proto/convert.h"

namespace perfcast::client {
namespace {

struct ImportFlags {
  std::vector<std::string> files;
  std::string format;
  int batch_size = 2000;
  int show_rejections = 20;
};

// Progress on a terminal: records sent so far, redrawn in place.
class Progress {
 public:
  Progress() : enabled_(isatty(STDERR_FILENO)) {}
  void Update(int64_t sent, const std::string& file) {
    if (!enabled_) return;
    auto now = std::chrono::steady_clock::now();
    if (now - last_ < std::chrono::milliseconds(100)) return;
    last_ = now;
    std::cerr << absl::StrFormat("\rimporting %s: %d records sent", file, sent) << std::flush;
  }
  void Done() {
    if (enabled_) std::cerr << "\r\033[K" << std::flush;
  }

 private:
  bool enabled_;
  std::chrono::steady_clock::time_point last_{};
};

std::optional<CliError> RunImport(ClientContext& context, const ImportFlags& flags) {
  std::vector<ImportFile> files;
  for (const std::string& path : flags.files) {
    absl::StatusOr<ProfileFormat> format =
        flags.format.empty() ? FormatOfPath(path) : ParseProfileFormat(flags.format);
    if (!format.ok()) return CliError{kExitUsage, std::string(format.status().message())};
    files.push_back({path, *format});
  }
  Progress progress;
  ImportOptions options;
  options.batch_size = flags.batch_size;
  options.progress = [&](int64_t sent, const std::string& file) { progress.Update(sent, file); };
  absl::StatusOr<std::shared_ptr<grpc::Channel>> channel = context.Channel();
  if (!channel.ok()) return Failed(channel.status());
  absl::StatusOr<ImportReport> report = ImportFiles(*channel, files, options);
  progress.Done();
  if (!report.ok()) {
    return CliError{kExitFailure, Describe(report.status())};
  }
  const int64_t rejected = report->rejected;
  if (context.Structured()) {
    context.Out().Document({{"records", report->records},
                            {"accepted", report->accepted},
                            {"duplicates", report->duplicates},
                            {"rejected", rejected}});
  } else {
    int64_t shown = 0;
    for (const ImportReport::Rejected& r : report->first_rejections) {
      if (shown == flags.show_rejections) break;
      std::cerr << (r.file >= 0 ? flags.files[r.file] : std::string("?")) << ":" << r.line
                << ": rejected: " << Printable(r.reason, kMaxShownMessageBytes) << "\n";
      ++shown;
    }
    if (rejected > shown) {
      std::cerr << "... and " << rejected - shown << " more rejected records\n";
    }
    Table table({"FILES", "RECORDS", "ACCEPTED", "DUPLICATES", "REJECTED"});
    table.AddRow({absl::StrCat(flags.files.size()), absl::StrCat(report->records),
                  absl::StrCat(report->accepted), absl::StrCat(report->duplicates),
                  absl::StrCat(rejected)});
    table.Print(std::cout, context.TableWidth());
  }
  if (rejected > 0) {
    return CliError{kExitPartial, absl::StrCat(rejected, " records rejected; the ",
                                               report->accepted, " valid ones were stored")};
  }
  return std::nullopt;
}

struct ExportOptions {
  std::string format = "csv";
  std::string out;
  std::string node, gpu, family, phase, kind;
  int64_t limit = 0;
  int method_version = 0;
};

std::optional<CliError> RunExport(ClientContext& context, const ExportOptions& options) {
  absl::StatusOr<ProfileFormat> format = ParseProfileFormat(options.format);
  if (!format.ok()) return CliError{kExitUsage, std::string(format.status().message())};
  std::string gpu = options.gpu;
  if (auto error = ResolveGpuFlag("--gpu", gpu)) return error;
  v1::ExportRequest request;
  request.set_node_name(options.node);
  request.set_gpu_model(gpu);
  request.set_family(options.family);
  request.set_limit(options.limit);
  request.set_method_version(options.method_version);
  if (!options.phase.empty()) {
    absl::StatusOr<models::Phase> phase = models::ParsePhase(options.phase);
    if (!phase.ok()) return CliError{kExitUsage, std::string(phase.status().message())};
    request.set_phase(proto::ToProto(*phase));
  }
  if (!options.kind.empty()) {
    absl::StatusOr<models::WorkloadKind> kind = models::ParseWorkloadKind(options.kind);
    if (!kind.ok()) return CliError{kExitUsage, std::string(kind.status().message())};
    request.set_kind(proto::ToProto(*kind));
  }
  // A file appears only once the whole export is in it (AtomicFile); on
  // standard output a failed export ends with its error and exit code 1.
  std::unique_ptr<AtomicFile> file;
  if (!options.out.empty()) {
    absl::StatusOr<std::unique_ptr<AtomicFile>> created = AtomicFile::Create(options.out);
    if (!created.ok()) return CliError{kExitFailure, std::string(created.status().message())};
    file = *std::move(created);
  }
  std::ostream& out = file != nullptr ? file->stream() : std::cout;
  absl::StatusOr<std::unique_ptr<ProfileWriter>> writer =
      ProfileWriter::Create(*format, out, /*to_terminal=*/file == nullptr && isatty(STDOUT_FILENO));
  if (!writer.ok()) return CliError{kExitUsage, std::string(writer.status().message())};

  // Each row names its node's GPU model, so that the export imports into a
  // server that lacks the node; nodes are looked up once each.
  absl::StatusOr<std::shared_ptr<grpc::Channel>> channel = context.Channel();
  if (!channel.ok()) return Failed(channel.status());
  auto registry = v1::NodeRegistry::NewStub(*channel);
  std::map<std::string, std::string> gpu_of_node;
  auto gpu_of = [&](const std::string& node) -> const std::string& {
    auto known = gpu_of_node.find(node);
    if (known != gpu_of_node.end()) return known->second;
    grpc::ClientContext get;
    context.SetDeadline(get);
    v1::GetNodeRequest request;
    request.set_name(node);
    v1::GetNodeResponse response;
    std::string gpu;
    if (registry->Get(&get, request, &response).ok()) gpu = response.node().gpu().model();
    return gpu_of_node.emplace(node, std::move(gpu)).first->second;
  };

  auto stub = v1::ProfileStore::NewStub(*channel);
  grpc::ClientContext call;
  std::unique_ptr<grpc::ClientReader<v1::ExportResponse>> stream = stub->Export(&call, request);
  v1::ExportResponse batch;
  int64_t count = 0;
  while (stream->Read(&batch)) {
    for (const v1::Profile& wire : batch.profiles()) {
      absl::StatusOr<models::Profile> profile = proto::FromProto(wire);
      if (!profile.ok()) {
        call.TryCancel();
        return CliError{kExitFailure, Describe(profile.status())};
      }
      (*writer)->Write(*profile, gpu_of(profile->node_name));
      ++count;
    }
  }
  grpc::Status status = stream->Finish();
  if (!status.ok()) {
    std::string message = Describe(status);
    if (file != nullptr) absl::StrAppend(&message, "; ", options.out, " was not written");
    return CliError{kExitFailure, message};
  }
  if (file != nullptr) {
    if (absl::Status committed = file->Commit(); !committed.ok()) {
      return CliError{kExitFailure, std::string(committed.message())};
    }
    std::cerr << "exported " << count << " profiles to " << options.out << "\n";
  }
  return std::nullopt;
}

struct CompareFlags {
  std::string first, second;
  std::string format;
  double min_ms = 1.0;
  double host_tolerance = 0.05;
};

// Every profile of one run's file; records that cannot be read are skipped
// with a warning, as an import would reject them.
absl::StatusOr<std::vector<models::Profile>> ReadRun(const std::string& path,
                                                     const std::string& format_name) {
  ASSIGN_OR_RETURN(ProfileFormat format,
      format_name.empty() ? FormatOfPath(path) : ParseProfileFormat(format_name));
  std::vector<models::Profile> profiles;
  int64_t skipped = 0;
  ProfileSink sink;
  sink.node = [](const models::Node&) {};
  sink.profile = [&](int64_t, const models::Profile& p) { profiles.push_back(p); };
  sink.bad_record = [&](int64_t, const std::string&) { ++skipped; };
  RETURN_IF_ERROR(ReadProfiles(path, format, sink));
  if (skipped > 0) {
    std::cerr << path << ": skipped " << skipped << " records that cannot be read "
              << "(perfcast import lists them)\n";
  }
  return profiles;
}

std::string Percent(double fraction, bool sign = false) {
  return absl::StrFormat(sign ? "%+.2f%%" : "%.2f%%", 100 * fraction);
}

std::optional<CliError> RunCompare(ClientContext& context, const CompareFlags& flags) {
  absl::StatusOr<std::vector<models::Profile>> first = ReadRun(flags.first, flags.format);
  if (!first.ok()) return CliError{kExitFailure, Describe(first.status())};
  absl::StatusOr<std::vector<models::Profile>> second = ReadRun(flags.second, flags.format);
  if (!second.ok()) return CliError{kExitFailure, Describe(second.status())};
  const CompareOptions options{.min_ms = flags.min_ms, .host_tolerance = flags.host_tolerance};
  absl::StatusOr<CompareReport> report = CompareRuns(*first, *second, options);
  if (!report.ok()) return CliError{kExitFailure, Describe(report.status())};
  if (context.Structured()) {
    context.Out().Document(nlohmann::json::parse(CompareReportJson(*report, options), nullptr,
                                                 /*allow_exceptions=*/false));
    return std::nullopt;
  }
  Table table({"FAMILY", "N", "MEDIAN |DIFF|", "P90 |DIFF|", "MEDIAN DIFF"});
  auto row = [&](const DifferenceStats& s) {
    table.AddRow({s.group, absl::StrCat(s.n), Percent(s.median_abs), Percent(s.p90_abs),
                  Percent(s.median_signed, /*sign=*/true)});
  };
  for (const DifferenceStats& s : report->families) row(s);
  row(report->overall);
  if (report->host_matched.n > 0) row(report->host_matched);
  table.Print(std::cout, context.TableWidth());
  std::cout << absl::StrFormat(
      "median step time of the second run against the first, configurations matched by "
      "workload key with steps >= %g ms; %d only in the first, %d only in the second, %d "
      "shorter\n",
      flags.min_ms, report->only_in_a, report->only_in_b, report->below_min);
  if (report->host_matched.n > 0) {
    std::cout << absl::StrFormat(
        "host-matched: the %d of them whose host dispatch rates agree within %g%% (each "
        "configuration's own probes; files from agents before 2026-11-26 carry their run's "
        "mean)\n",
        report->host_matched.n, 100 * flags.host_tolerance);
  }
  return std::nullopt;
}

}  // namespace

void RegisterProfileCommands(CLI::App& app, ClientContext& context, Dispatch& dispatch) {
  auto import = std::make_shared<ImportFlags>();
  CLI::App* import_cmd = app.add_subcommand(
      "import", "Import profiles (agent .sqlite files, CSV, JSON Lines) in one transaction");
  import_cmd->add_option("files", import->files, "Files to import")->required()->check(CLI::ExistingFile);
  import_cmd->add_option("--format", import->format, "csv, jsonl or sqlite (default: by extension)");
  import_cmd->footer(
      "CSV and JSON Lines take the columns `perfcast export` writes (README, Profile files); "
      "required: family, batch_size, mean_ms, and node or gpu. Optional `loop`: python (an "
      "eager PyTorch loop, the default for a row no agent measured) or cpp (a LibTorch loop, "
      "as the agent's); fit --calibrate and evaluate price each row as its loop. A bad value "
      "rejects its row, named by file and line.");
  import_cmd->add_option("--batch-size", import->batch_size, "Profiles per stream message")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  import_cmd->callback([&context, &dispatch, import] {
    dispatch.action = [&context, import] { return RunImport(context, *import); };
  });

  auto exp = std::make_shared<ExportOptions>();
  CLI::App* export_cmd = app.add_subcommand("export", "Export stored profiles as CSV or JSON Lines");
  export_cmd->add_option("--format", exp->format, "csv or jsonl")->capture_default_str();
  export_cmd->add_option("--out", exp->out, "Output file (default: standard output)");
  export_cmd->add_option("--node", exp->node, "Only this node");
  export_cmd->add_option("--gpu", exp->gpu, "Only this GPU model");
  export_cmd->add_option("--family", exp->family, "Only this family");
  export_cmd->add_option("--phase", exp->phase, "train or inference");
  export_cmd->add_option("--kind", exp->kind, "model or op");
  export_cmd->add_option("--limit", exp->limit, "At most this many profiles")
      ->check(DecimalInteger());
  export_cmd->add_option("--method-version", exp->method_version,
                         "Only profiles of this measurement method (default: every method)")
      ->check(CLI::PositiveNumber);
  export_cmd->callback([&context, &dispatch, exp] {
    dispatch.action = [&context, exp] { return RunExport(context, *exp); };
  });

  auto compare = std::make_shared<CompareFlags>();
  CLI::App* compare_cmd = app.add_subcommand(
      "compare",
      "Reproducibility of two runs of one plan (agent files or exports): per family and "
      "overall, the median and p90 of |difference| of the median step time (reads files; "
      "no server)");
  compare_cmd->add_option("first", compare->first, "The reference run")
      ->required()
      ->check(CLI::ExistingFile);
  compare_cmd->add_option("second", compare->second, "The run compared with it")
      ->required()
      ->check(CLI::ExistingFile);
  compare_cmd->add_option("--format", compare->format, "csv, jsonl or sqlite (default: by extension)");
  compare_cmd->add_option("--min-ms", compare->min_ms,
                          "Leave out configurations with shorter steps (mean of both runs)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  compare_cmd->add_option("--host-tolerance", compare->host_tolerance,
                          "Also report the configurations whose host dispatch rates agree "
                          "within this fraction (host-matched)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  compare_cmd->callback([&context, &dispatch, compare] {
    dispatch.action = [&context, compare] { return RunCompare(context, *compare); };
  });
}

}  // namespace perfcast::client
