#include "client/importer.h"

#include <algorithm>
#include <iterator>
#include <set>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "perfcast/v1/node_registry.grpc.pb.h"
#include "perfcast/v1/profile_store.grpc.pb.h"
#include "proto/convert.h"

namespace perfcast::client {
namespace {

// Where the records sent came from, by stream index, to report the server's
// rejections as file:line. A run of records on consecutive lines of one file
// is kept as its first record, so a file costs a few entries, not one per
// record.
class Origins {
 public:
  void Add(int file, int64_t line) {
    if (runs_.empty() || runs_.back().file != file ||
        runs_.back().line + (count_ - runs_.back().index) != line) {
      runs_.push_back({count_, file, line});
    }
    ++count_;
  }
  int64_t count() const { return count_; }
  // The file and line of record `index`; file -1 when out of range.
  std::pair<int, int64_t> Of(int64_t index) const {
    if (index < 0 || index >= count_) return {-1, index};
    auto run = std::prev(std::upper_bound(
        runs_.begin(), runs_.end(), index, [](int64_t i, const Run& r) { return i < r.index; }));
    return {run->file, run->line + (index - run->index)};
  }

 private:
  struct Run {
    int64_t index;  // of its first record
    int file;
    int64_t line;
  };
  std::vector<Run> runs_;
  int64_t count_ = 0;
};

// The rejections a report lists: the first `max_kept` by file and line.
class RejectionList {
 public:
  explicit RejectionList(int64_t max_kept) : max_kept_(std::max<int64_t>(max_kept, 0)) {}
  void Add(int file, int64_t line, const std::string& reason) {
    ++count_;
    kept_.push_back({file, line, reason});
    // Trimmed when twice the bound, so that adding stays cheap.
    if (static_cast<int64_t>(kept_.size()) >= 2 * max_kept_ + 1) Trim();
  }
  int64_t count() const { return count_; }
  void CountMore(int64_t n) { count_ += n; }
  std::vector<ImportReport::Rejected> Take() {
    Trim();
    return std::move(kept_);
  }

 private:
  void Trim() {
    std::stable_sort(kept_.begin(), kept_.end(), [](const auto& a, const auto& b) {
      return std::tie(a.file, a.line) < std::tie(b.file, b.line);
    });
    if (static_cast<int64_t>(kept_.size()) > max_kept_) kept_.resize(max_kept_);
  }

  const int64_t max_kept_;
  int64_t count_ = 0;
  std::vector<ImportReport::Rejected> kept_;
};

}  // namespace

absl::StatusOr<ImportReport> ImportFiles(const std::shared_ptr<grpc::Channel>& channel,
                                         const std::vector<ImportFile>& files,
                                         const ImportOptions& options) {
  auto stub = v1::ProfileStore::NewStub(channel);
  auto registry = v1::NodeRegistry::NewStub(channel);
  grpc::ClientContext call;
  v1::ImportResponse response;
  std::unique_ptr<grpc::ClientWriter<v1::ImportRequest>> stream = stub->Import(&call, &response);

  Origins origins;
  RejectionList rejections(options.max_rejections_kept);
  int64_t parse_rejections = 0;
  v1::ImportRequest batch;
  bool stream_broken = false;
  auto flush = [&] {
    if (batch.nodes_size() == 0 && batch.profiles_size() == 0) return;
    if (!stream_broken && !stream->Write(batch)) stream_broken = true;
    batch.Clear();
  };
  // The first problem that ends the import before the stream does.
  absl::Status stopped;

  for (size_t f = 0; f < files.size() && !stream_broken && stopped.ok(); ++f) {
    const int file_index = static_cast<int>(f);
    ProfileSink sink;
    sink.node = [&](const models::Node& node) {
      flush();  // nodes travel ahead of the profiles that name them
      proto::ToProto(node, batch.add_nodes());
    };
    sink.node_if_absent = [&](const models::Node& node) {
      grpc::ClientContext get;
      v1::GetNodeRequest request;
      request.set_name(node.name);
      v1::GetNodeResponse known;
      if (registry->Get(&get, request, &known).error_code() == grpc::StatusCode::NOT_FOUND) {
        sink.node(node);
      }
    };
    sink.profile = [&](int64_t line, const models::Profile& profile) {
      if (!stopped.ok()) return;
      proto::ToProto(profile, batch.add_profiles());
      origins.Add(file_index, line);
      if (batch.profiles_size() >= options.batch_size) {
        flush();
        if (options.progress) options.progress(origins.count(), files[f].path);
      }
    };
    sink.stop = [&] { return !stopped.ok() || stream_broken; };
    sink.bad_record = [&](int64_t line, const std::string& reason) {
      if (!stopped.ok()) return;
      rejections.Add(file_index, line, reason);
      ++parse_rejections;
      if (parse_rejections >= options.max_parse_rejections && parse_rejections > origins.count()) {
        stopped = absl::InvalidArgumentError(absl::StrCat(
            files[f].path, ": ", parse_rejections, " records could not be read and only ",
            origins.count(), " could (not a profile file?); the last: line ", line, ": ",
            reason.substr(0, 200)));
      }
    };
    absl::Status read = ReadProfiles(files[f].path, files[f].format, sink);
    if (read.ok()) read = stopped;
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
  for (const v1::Rejection& r : response.rejected()) {
    const auto [file, line] = origins.Of(r.index());
    rejections.Add(file, line, r.reason());
  }
  // The server may list only its first rejections; its counts hold them all.
  const int64_t server_rejections =
      std::max<int64_t>(response.received() - response.accepted() - response.duplicates(),
                        response.rejected_size());
  rejections.CountMore(server_rejections - response.rejected_size());
  ImportReport report;
  report.records = origins.count() + parse_rejections;
  report.accepted = response.accepted();
  report.duplicates = response.duplicates();
  report.rejected = rejections.count();
  report.first_rejections = rejections.Take();
  return report;
}

}  // namespace perfcast::client
