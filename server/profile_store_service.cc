#include "server/profile_store_service.h"

#include <algorithm>
#include <limits>
#include <memory>

#include "absl/strings/str_cat.h"
#include "db/pipelined_import.h"
#include "google/protobuf/arena.h"
#include "proto/convert.h"
#include "server/call_timer.h"
#include "server/grpc_status.h"
#include "server/rpc_observer.h"
#include "server/request_validation.h"

namespace perfcast::server {
namespace {

// The arena block an import stream parses its messages into, reused from
// message to message: a message of 5,000 profiles fits. Pages are touched
// only as far as messages fill them.
constexpr size_t kImportArenaBlockSize = size_t{4} << 20;

// Profiles handed to the store's writer at a time. Smaller than a client's
// message (the CLI sends 5,000): the writer starts on a message's first
// profiles while the rest are prepared, and after the stream's last message
// only its last batch is left to write, not the whole message.
constexpr size_t kProfilesPerBatch = 1'000;

}  // namespace

grpc::Status ProfileStoreService::Import(grpc::ServerContext* context,
                                         grpc::ServerReader<v1::ImportRequest>* reader,
                                         v1::ImportResponse* response) {
  if (grpc::Status s = auth_.Check(*context, "ProfileStore.Import"); !s.ok()) return s;
  const CallTimer timer(*context, limits_.max_call);
  // Returning before the commit rolls the transaction back; say why.
  auto abandon = [&](const grpc::Status& why) {
    logger_.Warning("import rolled back", {{"peer", context->peer()},
                                           {"reason", why.error_message()}});
    return grpc::Status(why.error_code(), why.error_message() + "; nothing stored");
  };
  // The transaction begins with the first message (a client that connects and
  // sends nothing holds no lock) and rolls back when this function returns
  // without committing: a client that disconnects, a cancellation, a stall or
  // a shutdown mid-stream stores nothing. The store writes each message on
  // the import's own thread while this one reads and prepares the next.
  IdleWatchdog idle(*context, limits_.max_import_idle);
  db::PipelinedImport import(store_);
  int64_t index = 0;
  // Each message is parsed into an arena that the next one reuses: its
  // thousands of messages, map entries and strings then cost a pointer bump
  // each instead of a malloc and a free, on the thread that must keep up
  // with the store's writer. Everything taken from a message is copied out
  // before the next Read.
  auto arena_block = std::make_unique_for_overwrite<char[]>(kImportArenaBlockSize);
  google::protobuf::ArenaOptions arena_options;
  arena_options.initial_block = arena_block.get();
  arena_options.initial_block_size = kImportArenaBlockSize;
  arena_options.max_block_size = kImportArenaBlockSize;
  google::protobuf::Arena arena(arena_options);
  for (;;) {
    arena.Reset();  // keeps the initial block
    auto* request = google::protobuf::Arena::CreateMessage<v1::ImportRequest>(&arena);
    if (!reader->Read(request)) break;
    idle.Touch();
    db::PipelinedImport::Batch batch = import.NewBatch();
    for (const v1::Node& wire_node : request->nodes()) {
      absl::StatusOr<models::Node> node = NodeFromImport(wire_node, catalog_);
      if (!node.ok()) return ToGrpcStatus(node.status());
      batch.nodes.push_back(*std::move(node));
    }
    if (index + request->profiles_size() > limits_.max_profiles_per_import) {
      return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                          absl::StrCat("an import stream may carry at most ",
                                       limits_.max_profiles_per_import,
                                       " profiles; split the import"));
    }
    for (const v1::Profile& wire_profile : request->profiles()) {
      absl::StatusOr<models::Profile> profile = proto::FromProto(wire_profile);
      if (!profile.ok()) {
        v1::Rejection* rejection = response->add_rejected();
        rejection->set_index(index++);
        rejection->set_reason(BoundedMessage(profile.status().message()));
        continue;
      }
      if (batch.profiles.empty()) {
        batch.profiles.reserve(std::min<size_t>(request->profiles_size(), kProfilesPerBatch));
      }
      batch.profiles.emplace_back(index++, db::PreparedProfile::Prepare(*std::move(profile)));
      if (batch.profiles.size() == kProfilesPerBatch) {
        if (absl::Status s = import.Submit(std::move(batch)); !s.ok()) return ToGrpcStatus(s);
        batch = import.NewBatch();
      }
    }
    // Even an empty message's (empty) batch: the first begins the transaction.
    if (absl::Status s = import.Submit(std::move(batch)); !s.ok()) return ToGrpcStatus(s);
    if (grpc::Status s = timer.Check(); !s.ok()) return abandon(s);
  }
  // Read() also ends when the call is cancelled (by the client, its deadline,
  // the server's cap or the idle watchdog), which must not commit what
  // arrived so far.
  if (idle.Fired()) {
    return abandon(grpc::Status(
        grpc::StatusCode::DEADLINE_EXCEEDED,
        absl::StrCat("the import stream sent nothing for ", absl::FormatDuration(idle.idle()),
                     " (perfcastd --import_idle_seconds)")));
  }
  // The commit alone is left after the last check.
  if (absl::Status s = import.Drain(); !s.ok()) return ToGrpcStatus(s);
  if (grpc::Status s = timer.Check(); !s.ok()) return abandon(s);
  absl::StatusOr<db::ImportSummary> summary = import.Commit();
  if (!summary.ok()) return ToGrpcStatus(summary.status());
  response->set_received(index);
  response->set_accepted(summary->accepted);
  response->set_duplicates(summary->duplicates);
  for (const db::Rejection& r : summary->rejected) {
    v1::Rejection* rejection = response->add_rejected();
    rejection->set_index(r.index);
    rejection->set_reason(BoundedMessage(r.reason));
  }
  // Conversion rejections and store rejections interleave by index.
  std::sort(response->mutable_rejected()->begin(), response->mutable_rejected()->end(),
            [](const v1::Rejection& a, const v1::Rejection& b) { return a.index() < b.index(); });
  if (metrics_ != nullptr) {
    metrics_->ImportCommitted(summary->accepted, summary->duplicates, response->rejected_size());
  }
  logger_.Info("import committed",
               {{"request_id", RequestIdOf(*context)},
                {"peer", context->peer()},
                {"received", absl::StrCat(index)},
                {"accepted", absl::StrCat(summary->accepted)},
                {"duplicates", absl::StrCat(summary->duplicates)},
                {"rejected", absl::StrCat(response->rejected_size())}});
  return grpc::Status::OK;
}

grpc::Status ProfileStoreService::Export(grpc::ServerContext* context,
                                         const v1::ExportRequest* request,
                                         grpc::ServerWriter<v1::ExportResponse>* writer) {
  if (grpc::Status s = auth_.Check(*context, "ProfileStore.Export"); !s.ok()) return s;
  const CallTimer timer(*context, limits_.max_call);
  absl::StatusOr<ExportQuery> query = ExportQueryFromRequest(*request);
  if (!query.ok()) return ToGrpcStatus(query.status());
  const db::ProfileFilter& filter = query->filter;
  const int batch_size = query->batch_size;

  v1::ExportResponse batch;
  grpc::Status stopped;
  absl::Status status = store_.ScanProfiles(filter, [&](const models::Profile& profile) {
    proto::ToProto(profile, batch.add_profiles());
    if (batch.profiles_size() >= batch_size) {
      stopped = timer.Check();
      if (stopped.ok() && !writer->Write(batch)) {
        stopped = grpc::Status(grpc::StatusCode::CANCELLED, "export cancelled");
      }
      if (!stopped.ok()) return false;
      batch.Clear();
    }
    return true;
  });
  if (!status.ok()) return ToGrpcStatus(status);
  if (!stopped.ok()) return stopped;
  if (batch.profiles_size() > 0 && !writer->Write(batch)) {
    return grpc::Status(grpc::StatusCode::CANCELLED, "export cancelled");
  }
  return grpc::Status::OK;
}

}  // namespace perfcast::server
