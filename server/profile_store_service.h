// perfcast.v1.ProfileStore over a Store: transactional streaming import and
// filtered streaming export.
#ifndef PERFCAST_SERVER_PROFILE_STORE_SERVICE_H_
#define PERFCAST_SERVER_PROFILE_STORE_SERVICE_H_

#include <cstdint>

#include "db/store.h"
#include "models/gpu_catalog.h"
#include "perfcast/v1/profile_store.grpc.pb.h"
#include "server/logger.h"
#include "server/metrics.h"

namespace perfcast::server {

struct ProfileStoreLimits {
  // Profiles one Import stream may carry; beyond it the stream fails with
  // RESOURCE_EXHAUSTED and stores nothing (one stream is one transaction).
  int64_t max_profiles_per_import = 10'000'000;
};

class ProfileStoreService final : public v1::ProfileStore::Service {
 public:
  // `store`, `catalog`, `logger` and `metrics` (null: none) must outlive the
  // service.
  ProfileStoreService(db::Store& store, const models::GpuCatalog& catalog, Logger& logger,
                      ProfileStoreLimits limits = {}, Metrics* metrics = nullptr)
      : store_(store), catalog_(catalog), logger_(logger), limits_(limits), metrics_(metrics) {}

  grpc::Status Import(grpc::ServerContext* context, grpc::ServerReader<v1::ImportRequest>* reader,
                      v1::ImportResponse* response) override;
  grpc::Status Export(grpc::ServerContext* context, const v1::ExportRequest* request,
                      grpc::ServerWriter<v1::ExportResponse>* writer) override;

 private:
  db::Store& store_;
  const models::GpuCatalog& catalog_;
  Logger& logger_;
  ProfileStoreLimits limits_;
  Metrics* const metrics_;
};

}  // namespace perfcast::server

#endif  // PERFCAST_SERVER_PROFILE_STORE_SERVICE_H_
