// perfcast import FILE... / perfcast export
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <iostream>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/command.h"
#include "client/profile_files.h"
#include "client/table.h"
#include "perfcast/v1/profile_store.grpc.pb.h"
#include "proto/convert.h"

namespace perfcast::client {
namespace {

struct ImportOptions {
  std::vector<std::string> files;
  std::string format;
  int batch_size = 2000;
  int show_rejections = 20;
};

// Where a record sent to the server came from, to report rejections as
// file:line rather than stream positions.
struct Origin {
  int file;
  int64_t line;
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

std::optional<CliError> RunImport(ClientContext& context, const ImportOptions& options) {
  std::vector<ProfileFormat> formats;
  for (const std::string& file : options.files) {
    absl::StatusOr<ProfileFormat> format =
        options.format.empty() ? FormatOfPath(file) : ParseProfileFormat(options.format);
    if (!format.ok()) return CliError{kExitUsage, std::string(format.status().message())};
    formats.push_back(*format);
  }

  auto stub = v1::ProfileStore::NewStub(context.Channel());
  grpc::ClientContext call;
  v1::ImportResponse response;
  std::unique_ptr<grpc::ClientWriter<v1::ImportRequest>> stream = stub->Import(&call, &response);

  std::vector<Origin> origins;  // per record sent, by stream index
  std::vector<std::pair<Origin, std::string>> local_rejections;
  v1::ImportRequest batch;
  bool stream_broken = false;
  Progress progress;
  auto flush = [&] {
    if (batch.nodes_size() == 0 && batch.profiles_size() == 0) return;
    if (!stream_broken && !stream->Write(batch)) stream_broken = true;
    batch.Clear();
  };

  for (size_t f = 0; f < options.files.size() && !stream_broken; ++f) {
    const int file_index = static_cast<int>(f);
    ProfileSink sink;
    sink.node = [&](const models::Node& node) {
      // Nodes travel ahead of the profiles that name them.
      flush();
      proto::ToProto(node, batch.add_nodes());
    };
    sink.profile = [&](int64_t line, const models::Profile& profile) {
      proto::ToProto(profile, batch.add_profiles());
      origins.push_back({file_index, line});
      if (batch.profiles_size() >= options.batch_size) {
        flush();
        progress.Update(static_cast<int64_t>(origins.size()), options.files[f]);
      }
    };
    sink.bad_record = [&](int64_t line, const std::string& reason) {
      local_rejections.push_back({{file_index, line}, reason});
    };
    absl::Status read = ReadProfiles(options.files[f], formats[f], sink);
    if (!read.ok()) {
      // A file-level problem aborts the whole import: nothing is stored.
      progress.Done();
      call.TryCancel();
      stream->Finish().IgnoreError();
      return CliError{kExitFailure, absl::StrCat(Describe(read), "; nothing imported")};
    }
  }
  flush();
  progress.Done();
  stream->WritesDone();
  grpc::Status status = stream->Finish();
  if (!status.ok()) return CliError{kExitFailure, absl::StrCat(Describe(status), "; nothing imported")};

  for (const v1::Rejection& r : response.rejected()) {
    Origin origin = r.index() >= 0 && r.index() < static_cast<int64_t>(origins.size())
                        ? origins[r.index()]
                        : Origin{-1, r.index()};
    local_rejections.push_back({origin, r.reason()});
  }
  std::sort(local_rejections.begin(), local_rejections.end(), [](const auto& a, const auto& b) {
    return std::tie(a.first.file, a.first.line) < std::tie(b.first.file, b.first.line);
  });
  const int64_t rejected = static_cast<int64_t>(local_rejections.size());
  if (context.output == OutputFormat::kJson) {
    std::cout << absl::StrFormat(
        "{\"records\":%d,\"accepted\":%d,\"duplicates\":%d,\"rejected\":%d}\n",
        static_cast<int64_t>(origins.size()) + rejected - response.rejected_size(),
        response.accepted(), response.duplicates(), rejected);
  } else {
    for (int i = 0; i < rejected && i < options.show_rejections; ++i) {
      const auto& [origin, reason] = local_rejections[i];
      std::cerr << (origin.file >= 0 ? options.files[origin.file] : std::string("?")) << ":"
                << origin.line << ": rejected: " << reason << "\n";
    }
    if (rejected > options.show_rejections) {
      std::cerr << "... and " << rejected - options.show_rejections << " more rejected records\n";
    }
    Table table({"FILES", "RECORDS", "ACCEPTED", "DUPLICATES", "REJECTED"});
    table.AddRow({absl::StrCat(options.files.size()),
                  absl::StrCat(static_cast<int64_t>(origins.size()) + rejected -
                               response.rejected_size()),
                  absl::StrCat(response.accepted()), absl::StrCat(response.duplicates()),
                  absl::StrCat(rejected)});
    table.Print(std::cout);
  }
  if (rejected > 0) {
    return CliError{kExitPartial,
                    absl::StrCat(rejected, " records rejected; the ", response.accepted(),
                                 " valid ones were stored")};
  }
  return std::nullopt;
}

struct ExportOptions {
  std::string format = "csv";
  std::string out;
  std::string node, gpu, family, phase, kind;
  int64_t limit = 0;
};

std::optional<CliError> RunExport(ClientContext& context, const ExportOptions& options) {
  absl::StatusOr<ProfileFormat> format = ParseProfileFormat(options.format);
  if (!format.ok()) return CliError{kExitUsage, std::string(format.status().message())};
  v1::ExportRequest request;
  request.set_node_name(options.node);
  request.set_gpu_model(options.gpu);
  request.set_family(options.family);
  request.set_limit(options.limit);
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
  std::ofstream file;
  if (!options.out.empty()) {
    file.open(options.out);
    if (!file) return CliError{kExitFailure, absl::StrCat("cannot write ", options.out)};
  }
  std::ostream& out = options.out.empty() ? std::cout : file;
  absl::StatusOr<std::unique_ptr<ProfileWriter>> writer = ProfileWriter::Create(*format, out);
  if (!writer.ok()) return CliError{kExitUsage, std::string(writer.status().message())};

  auto stub = v1::ProfileStore::NewStub(context.Channel());
  grpc::ClientContext call;
  std::unique_ptr<grpc::ClientReader<v1::ExportResponse>> stream = stub->Export(&call, request);
  v1::ExportResponse batch;
  int64_t count = 0;
  while (stream->Read(&batch)) {
    for (const v1::Profile& wire : batch.profiles()) {
      absl::StatusOr<models::Profile> profile = proto::FromProto(wire);
      if (!profile.ok()) return CliError{kExitFailure, Describe(profile.status())};
      (*writer)->Write(*profile);
      ++count;
    }
  }
  grpc::Status status = stream->Finish();
  if (!status.ok()) return CliError{kExitFailure, Describe(status)};
  if (!options.out.empty()) std::cerr << "exported " << count << " profiles to " << options.out << "\n";
  return std::nullopt;
}

}  // namespace

void RegisterProfileCommands(CLI::App& app, ClientContext& context, Dispatch& dispatch) {
  auto import = std::make_shared<ImportOptions>();
  CLI::App* import_cmd = app.add_subcommand(
      "import", "Import profiles (agent .sqlite files, CSV, JSON Lines) in one transaction");
  import_cmd->add_option("files", import->files, "Files to import")->required()->check(CLI::ExistingFile);
  import_cmd->add_option("--format", import->format, "csv, jsonl or sqlite (default: by extension)");
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
  export_cmd->add_option("--limit", exp->limit, "At most this many profiles");
  export_cmd->callback([&context, &dispatch, exp] {
    dispatch.action = [&context, exp] { return RunExport(context, *exp); };
  });
}

}  // namespace perfcast::client
