#include "client/importer.h"

#include <algorithm>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "perfcast/v1/profile_store.grpc.pb.h"
#include "proto/convert.h"

namespace perfcast::client {

absl::StatusOr<ImportReport> ImportFiles(const std::shared_ptr<grpc::Channel>& channel,
                                         const std::vector<ImportFile>& files,
                                         const ImportOptions& options) {
  auto stub = v1::ProfileStore::NewStub(channel);
  grpc::ClientContext call;
  v1::ImportResponse response;
  std::unique_ptr<grpc::ClientWriter<v1::ImportRequest>> stream = stub->Import(&call, &response);

  // Where each record sent came from, by stream index, to report server
  // rejections as file:line.
  std::vector<std::pair<int, int64_t>> origins;
  ImportReport report;
  v1::ImportRequest batch;
  bool stream_broken = false;
  auto flush = [&] {
    if (batch.nodes_size() == 0 && batch.profiles_size() == 0) return;
    if (!stream_broken && !stream->Write(batch)) stream_broken = true;
    batch.Clear();
  };

  for (size_t f = 0; f < files.size() && !stream_broken; ++f) {
    const int file_index = static_cast<int>(f);
    ProfileSink sink;
    sink.node = [&](const models::Node& node) {
      flush();  // nodes travel ahead of the profiles that name them
      proto::ToProto(node, batch.add_nodes());
    };
    sink.profile = [&](int64_t line, const models::Profile& profile) {
      proto::ToProto(profile, batch.add_profiles());
      origins.emplace_back(file_index, line);
      if (batch.profiles_size() >= options.batch_size) {
        flush();
        if (options.progress) options.progress(static_cast<int64_t>(origins.size()), files[f].path);
      }
    };
    sink.bad_record = [&](int64_t line, const std::string& reason) {
      report.rejected.push_back({file_index, line, reason});
    };
    absl::Status read = ReadProfiles(files[f].path, files[f].format, sink);
    if (!read.ok()) {
      call.TryCancel();
      stream->Finish().IgnoreError();
      return absl::Status(read.code(), absl::StrCat(read.message(), kNothingImported));
    }
  }
  flush();
  const bool all_sent = !stream_broken && stream->WritesDone();
  grpc::Status status = stream->Finish();
  if (!status.ok()) {
    // The server commits when the stream ends; once all of it was sent, a
    // lost connection or deadline may have come after the commit.
    const grpc::StatusCode code = status.error_code();
    const bool unknown = all_sent && (code == grpc::StatusCode::UNAVAILABLE ||
                                      code == grpc::StatusCode::DEADLINE_EXCEEDED ||
                                      code == grpc::StatusCode::CANCELLED ||
                                      code == grpc::StatusCode::UNKNOWN);
    return absl::Status(static_cast<absl::StatusCode>(code),
                        absl::StrCat(status.error_message(),
                                     unknown ? kOutcomeUnknown : kNothingImported));
  }
  const int64_t parse_rejections = static_cast<int64_t>(report.rejected.size());
  for (const v1::Rejection& r : response.rejected()) {
    if (r.index() >= 0 && r.index() < static_cast<int64_t>(origins.size())) {
      report.rejected.push_back({origins[r.index()].first, origins[r.index()].second, r.reason()});
    } else {
      report.rejected.push_back({-1, r.index(), r.reason()});
    }
  }
  std::sort(report.rejected.begin(), report.rejected.end(), [](const auto& a, const auto& b) {
    return std::tie(a.file, a.line) < std::tie(b.file, b.line);
  });
  report.records = static_cast<int64_t>(origins.size()) + parse_rejections;
  report.accepted = response.accepted();
  report.duplicates = response.duplicates();
  return report;
}

}  // namespace perfcast::client
