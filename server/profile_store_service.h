// perfcast.v1.ProfileStore over a Store: transactional streaming import and
// filtered streaming export.
#ifndef PERFCAST_SERVER_PROFILE_STORE_SERVICE_H_
#define PERFCAST_SERVER_PROFILE_STORE_SERVICE_H_

#include <cstdint>

#include "absl/time/time.h"
#include "db/store.h"
#include "models/gpu_catalog.h"
#include "perfcast/v1/profile_store.grpc.pb.h"
#include "server/authenticator.h"
#include "server/logger.h"
#include "server/metrics.h"

namespace perfcast::server {

// The rejections an ImportResponse lists at most (the client's message
// limit bounds the response; its counts say how many there were).
inline constexpr int kMaxListedRejections = 10'000;

struct ProfileStoreLimits {
  // Profiles one Import stream may carry; beyond it the stream fails with
  // RESOURCE_EXHAUSTED and stores nothing (one stream is one transaction).
  int64_t max_profiles_per_import = 10'000'000;
  // How long one Import or Export may run (see CallTimer); an import past it
  // fails with DEADLINE_EXCEEDED and stores nothing.
  absl::Duration max_call = absl::InfiniteDuration();
  // How long an Import stream may go without a message before it is
  // cancelled (and rolled back); see IdleWatchdog. Infinite: no limit.
  absl::Duration max_import_idle = absl::Seconds(60);
};

// Import reads each message's bytes and parses them itself: gRPC's reader
// ends a stream the same way whether the client closed it or sent a message
// that does not parse, and an import must not commit what came before an
// unreadable message. An import stores everything it acknowledges and
// nothing when it fails: a message that does not parse (INVALID_ARGUMENT), a
// message past the server's size limit or a stream cut off (the status the
// client sees; the transaction is rolled back).
class ProfileStoreService final : public v1::ProfileStore::Service {
 public:
  // `store`, `catalog`, `logger`, `auth` and `metrics` (null: none) must
  // outlive the service.
  ProfileStoreService(db::Store& store, const models::GpuCatalog& catalog, Logger& logger,
                      const Authenticator& auth, ProfileStoreLimits limits = {},
                      Metrics* metrics = nullptr);

  // The stream's messages as bytes (see above); the response lists at most
  // kMaxListedRejections rejections, by index, and its counts hold them all
  // (received - accepted - duplicates).
  grpc::Status ImportBytes(grpc::ServerContext* context, grpc::ServerReader<grpc::ByteBuffer>* reader,
                           v1::ImportResponse* response);
  grpc::Status Export(grpc::ServerContext* context, const v1::ExportRequest* request,
                      grpc::ServerWriter<v1::ExportResponse>* writer) override;

 private:
  db::Store& store_;
  const models::GpuCatalog& catalog_;
  Logger& logger_;
  const Authenticator& auth_;
  ProfileStoreLimits limits_;
  Metrics* const metrics_;
};

}  // namespace perfcast::server

#endif  // PERFCAST_SERVER_PROFILE_STORE_SERVICE_H_
