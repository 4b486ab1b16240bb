// Starting perfcastd's server: what a second server on the same port does.
#include "server/server.h"

#include <memory>

#include "absl/strings/str_cat.h"
#include "db/store.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "models/gpu_catalog.h"
#include "perfcast/v1/node_registry.grpc.pb.h"
#include "server/logger.h"

namespace perfcast::server {
namespace {

// gRPC's default SO_REUSEPORT let a second server bind a busy port and log
// "serving"; clients then alternated between two databases.
TEST(ServerTest, ABusyPortIsAnError) {
  Logger logger(LogLevel::kError);
  absl::StatusOr<std::unique_ptr<db::Store>> first_store = db::OpenStore(":memory:");
  absl::StatusOr<std::unique_ptr<db::Store>> second_store = db::OpenStore(":memory:");
  ASSERT_TRUE(first_store.ok() && second_store.ok());
  ServerOptions options;
  options.listen_address = "127.0.0.1:0";
  absl::StatusOr<std::unique_ptr<Server>> first =
      Server::Start(options, **first_store, models::GpuCatalog::BuiltIn(), logger);
  ASSERT_TRUE(first.ok()) << first.status();
  options.listen_address = absl::StrCat("127.0.0.1:", (*first)->port());
  absl::StatusOr<std::unique_ptr<Server>> second =
      Server::Start(options, **second_store, models::GpuCatalog::BuiltIn(), logger);
  EXPECT_EQ(second.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(second.status().message().find("in use"), std::string::npos) << second.status();
}

// perfcast --local: no port, the services answer over the in-process channel.
TEST(ServerTest, WithoutAnAddressItServesInProcessOnly) {
  Logger logger(LogLevel::kError);
  absl::StatusOr<std::unique_ptr<db::Store>> store = db::OpenStore(":memory:");
  ASSERT_TRUE(store.ok()) << store.status();
  ServerOptions options;
  options.listen_address = "";
  absl::StatusOr<std::unique_ptr<Server>> server =
      Server::Start(options, **store, models::GpuCatalog::BuiltIn(), logger);
  ASSERT_TRUE(server.ok()) << server.status();
  EXPECT_EQ((*server)->port(), 0);
  grpc::ClientContext call;
  v1::ListNodesResponse nodes;
  grpc::Status status = v1::NodeRegistry::NewStub((*server)->InProcessChannel())
                            ->List(&call, v1::ListNodesRequest(), &nodes);
  EXPECT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(nodes.nodes_size(), 0);
}

}  // namespace
}  // namespace perfcast::server
