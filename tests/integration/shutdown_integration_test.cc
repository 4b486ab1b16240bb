// perfcastd stopped by SIGTERM while an import stream is open: the import
// must roll back completely, the server must exit cleanly, and everything
// acknowledged before must survive the restart.
#include <sys/wait.h>

#include <chrono>
#include <thread>

#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "perfcast/v1/node_registry.grpc.pb.h"
#include "perfcast/v1/profile_store.grpc.pb.h"
#include "proto/convert.h"
#include "tests/db/test_util.h"
#include "tests/integration/process_harness.h"

namespace perfcast::testing {
namespace {

v1::ImportRequest Batch(int first, int count) {
  v1::ImportRequest request;
  for (int i = first; i < first + count; ++i) {
    proto::ToProto(SampleProfile("n1", i), request.add_profiles());
  }
  return request;
}

int64_t CountProfiles(const ServerProcess& server) {
  auto stub = v1::ProfileStore::NewStub(
      grpc::CreateChannel(server.address(), grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  auto reader = stub->Export(&context, v1::ExportRequest());
  v1::ExportResponse batch;
  int64_t count = 0;
  while (reader->Read(&batch)) count += batch.profiles_size();
  EXPECT_TRUE(reader->Finish().ok());
  return count;
}

TEST(ShutdownIntegrationTest, OpenImportRollsBackOnSigterm) {
  TempDir dir;
  const std::string database = dir.File("perfcast.db");
  auto server = std::make_unique<ServerProcess>(database,
                                                std::vector<std::string>{"--shutdown_grace=200ms"});
  ASSERT_TRUE(server->started());
  ASSERT_EQ(server->Cli({"nodes", "register", "--name", "n1", "--gpu", "H100-SXM5-80GB"}).exit_code, 0);

  auto channel = grpc::CreateChannel(server->address(), grpc::InsecureChannelCredentials());
  auto stub = v1::ProfileStore::NewStub(channel);
  {  // An acknowledged import.
    grpc::ClientContext context;
    v1::ImportResponse response;
    auto writer = stub->Import(&context, &response);
    ASSERT_TRUE(writer->Write(Batch(0, 100)));
    writer->WritesDone();
    ASSERT_TRUE(writer->Finish().ok());
    ASSERT_EQ(response.accepted(), 100);
  }
  grpc::ClientContext context;
  v1::ImportResponse response;
  auto writer = stub->Import(&context, &response);
  for (int b = 1; b <= 20; ++b) ASSERT_TRUE(writer->Write(Batch(b * 1000, 500)));
  // The server has the data but no end of stream: stop it now.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const int status = server->Stop();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  writer->WritesDone();
  EXPECT_FALSE(writer->Finish().ok());

  server = std::make_unique<ServerProcess>(database);
  ASSERT_TRUE(server->started());
  EXPECT_EQ(CountProfiles(*server), 100);
}

}  // namespace
}  // namespace perfcast::testing
