// Starting perfcastd's server: what a second server on the same port does.
#include "server/server.h"

#include <memory>

#include "absl/strings/str_cat.h"
#include "db/store.h"
#include "gtest/gtest.h"
#include "models/gpu_catalog.h"
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

}  // namespace
}  // namespace perfcast::server
