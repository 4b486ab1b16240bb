// The Import stream as perfcastd reads it: each message parsed into an arena
// that the next message reuses, and its profiles handed to the store's writer
// in batches smaller than a message. Whatever the message and batch
// boundaries, every accepted profile is stored as sent, rejections keep their
// index in the stream, duplicates are skipped, and an import that fails after
// some of its batches were written stores nothing.
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "db/store.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "models/gpu_catalog.h"
#include "perfcast/v1/profile_store.grpc.pb.h"
#include "proto/convert.h"
#include "server/logger.h"
#include "server/server.h"
#include "tests/db/test_util.h"

namespace perfcast::server {
namespace {

using perfcast::testing::SampleProfile;

class ImportStreamTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<db::Store>> store = db::OpenStore(dir_.File("perfcast.db"));
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
    ServerOptions options;
    options.listen_address = "127.0.0.1:0";
    absl::StatusOr<std::unique_ptr<Server>> server =
        Server::Start(options, *store_, models::GpuCatalog::BuiltIn(), logger_);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    grpc::ChannelArguments args;
    args.SetMaxSendMessageSize(64 << 20);
    profiles_ = v1::ProfileStore::NewStub(
        grpc::CreateCustomChannel(absl::StrCat("127.0.0.1:", server_->port()),
                                  grpc::InsecureChannelCredentials(), args));
  }

  static v1::Node WireNode(const std::string& name, const std::string& gpu) {
    v1::Node node;
    node.set_name(name);
    node.mutable_gpu()->set_model(gpu);
    return node;
  }

  // Profile `seed` on `node`, with an agent version too long for a string's
  // inline storage: its characters live outside the message's arena block.
  static models::Profile Profile(const std::string& node, int seed) {
    models::Profile p = SampleProfile(node, seed);
    p.agent_version = absl::StrCat("perfcast-agent import-stream-test build ", seed);
    return p;
  }

  grpc::Status Import(const std::vector<v1::ImportRequest>& messages,
                      v1::ImportResponse& response) {
    grpc::ClientContext context;
    auto stream = profiles_->Import(&context, &response);
    for (const v1::ImportRequest& message : messages) {
      if (!stream->Write(message)) break;
    }
    stream->WritesDone();
    return stream->Finish();
  }

  // Stored profiles by measurement time (distinct per seed), ids and hashes
  // cleared for comparing with what was sent.
  std::map<int64_t, models::Profile> Stored() {
    std::map<int64_t, models::Profile> out;
    EXPECT_TRUE(store_->ScanProfiles({}, [&](const models::Profile& p) {
                  models::Profile copy = p;
                  copy.id = 0;
                  copy.content_hash.clear();
                  out.emplace(copy.measured_at_us, copy);
                  return true;
                }).ok());
    return out;
  }

  perfcast::testing::TempDir dir_;
  Logger logger_{LogLevel::kError};
  std::unique_ptr<db::Store> store_;
  std::unique_ptr<Server> server_;
  std::unique_ptr<v1::ProfileStore::Stub> profiles_;
};

TEST_F(ImportStreamTest, ProfilesAcrossMessagesAndBatchesAreStoredAsSent) {
  const std::string long_node = "a-node-whose-name-is-longer-than-any-inline-string";
  std::vector<v1::ImportRequest> messages(3);
  *messages[0].add_nodes() = WireNode("n1", "H100-SXM5-80GB");
  *messages[0].add_nodes() = WireNode(long_node, "A100-SXM4-80GB");
  std::vector<models::Profile> sent;  // what the store should hold, in order
  std::vector<int64_t> rejected;      // stream indexes
  int64_t index = 0;
  auto add = [&](v1::ImportRequest& message, const models::Profile& p, bool stored) {
    proto::ToProto(p, message.add_profiles());
    if (stored) sent.push_back(p);
    ++index;
  };
  // 2,345 profiles in the first message: more than two writer batches. One
  // the store rejects (a negative mean) at the last place of a batch, one
  // the server cannot convert (an unknown precision) at the first of the next.
  for (int i = 0; i < 2345; ++i) {
    models::Profile p = Profile(i % 2 == 0 ? "n1" : long_node, i);
    if (i == 999) {
      p.iteration.mean_ms = -1;
      rejected.push_back(index);
      add(messages[0], p, false);
    } else if (i == 1000) {
      rejected.push_back(index);
      add(messages[0], p, false);
      messages[0].mutable_profiles()->rbegin()->mutable_workload()->set_precision(
          static_cast<v1::Precision>(999));
    } else {
      add(messages[0], p, true);
    }
  }
  // The second message is empty; the third repeats two profiles of the first
  // (duplicates) and brings 1,500 more, the last of them rejected.
  proto::ToProto(Profile("n1", 0), messages[2].add_profiles());
  ++index;
  proto::ToProto(Profile(long_node, 2001), messages[2].add_profiles());
  ++index;
  for (int i = 5000; i < 6500; ++i) {
    models::Profile p = Profile("n1", i);
    const bool last = i == 6499;
    if (last) {
      p.node_name = "ghost";
      rejected.push_back(index);
    }
    add(messages[2], p, !last);
  }

  v1::ImportResponse response;
  grpc::Status status = Import(messages, response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(response.received(), index);
  EXPECT_EQ(response.accepted(), static_cast<int64_t>(sent.size()));
  EXPECT_EQ(response.duplicates(), 2);
  ASSERT_EQ(response.rejected_size(), static_cast<int>(rejected.size()));
  for (int i = 0; i < response.rejected_size(); ++i) {
    EXPECT_EQ(response.rejected(i).index(), rejected[i]) << response.rejected(i).reason();
  }
  EXPECT_NE(response.rejected(0).reason().find("mean_ms"), std::string::npos);
  EXPECT_NE(response.rejected(2).reason().find("ghost"), std::string::npos);

  std::map<int64_t, models::Profile> stored = Stored();
  ASSERT_EQ(stored.size(), sent.size());
  for (const models::Profile& p : sent) {
    auto it = stored.find(p.measured_at_us);
    ASSERT_NE(it, stored.end()) << p.measured_at_us;
    EXPECT_EQ(it->second, p) << p.measured_at_us;
  }
}

TEST_F(ImportStreamTest, AFailureAfterWrittenBatchesStoresNothing) {
  std::vector<v1::ImportRequest> messages(2);
  *messages[0].add_nodes() = WireNode("n1", "H100-SXM5-80GB");
  for (int i = 0; i < 3500; ++i) proto::ToProto(Profile("n1", i), messages[0].add_profiles());
  // The same node on another GPU ends the import: the store refuses it.
  *messages[1].add_nodes() = WireNode("n1", "A100-SXM4-80GB");
  proto::ToProto(Profile("n1", 9999), messages[1].add_profiles());

  v1::ImportResponse response;
  grpc::Status status = Import(messages, response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::FAILED_PRECONDITION) << status.error_message();
  absl::StatusOr<int64_t> count = store_->CountProfiles({});
  ASSERT_TRUE(count.ok());
  EXPECT_EQ(*count, 0);
}

// Over raw gRPC, 2 valid messages, then one that does not parse, then 1
// more: gRPC's reader ended the stream at the unreadable one as if the
// client had closed it, and the import committed the first two with status
// OK. Now the stream fails INVALID_ARGUMENT and stores nothing, whatever
// makes the message unreadable.
TEST_F(ImportStreamTest, AnUnreadableMessageFailsTheStreamAndStoresNothing) {
  std::vector<std::string> valid(3);
  for (int m = 0; m < 3; ++m) {
    v1::ImportRequest message;
    if (m == 0) *message.add_nodes() = WireNode("n1", "H100-SXM5-80GB");
    for (int i = 0; i < 2; ++i) proto::ToProto(Profile("n1", 10 * m + i), message.add_profiles());
    valid[m] = message.SerializeAsString();
  }
  const std::vector<std::pair<std::string, std::string>> unreadable = {
      {"truncated", valid[1].substr(0, valid[1].size() - 3)},
      {"a length past the end", std::string("\x12\xff\xff\xff\xff\x0f", 6)},
      {"an invalid wire type", std::string("\x0f\x01", 2)},
  };
  auto channel = grpc::CreateChannel(absl::StrCat("127.0.0.1:", server_->port()),
                                     grpc::InsecureChannelCredentials());
  for (const auto& [what, bytes] : unreadable) {
    grpc::ClientContext context;
    grpc::ByteBuffer response;
    std::unique_ptr<grpc::ClientWriter<grpc::ByteBuffer>> stream(
        grpc::internal::ClientWriterFactory<grpc::ByteBuffer>::Create(
            channel.get(),
            grpc::internal::RpcMethod("/perfcast.v1.ProfileStore/Import",
                                      grpc::internal::RpcMethod::CLIENT_STREAMING),
            &context, &response));
    for (const std::string& message : {valid[0], valid[1], bytes, valid[2]}) {
      grpc::Slice slice(message);
      if (!stream->Write(grpc::ByteBuffer(&slice, 1))) break;
    }
    stream->WritesDone();
    grpc::Status status = stream->Finish();
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT)
        << what << ": " << status.error_message();
    EXPECT_NE(status.error_message().find("message 3"), std::string::npos) << status.error_message();
    absl::StatusOr<int64_t> count = store_->CountProfiles({});
    ASSERT_TRUE(count.ok());
    EXPECT_EQ(*count, 0) << what;
  }
}

// A message past the server's size limit: gRPC refuses it and ends the
// server's read of the stream; the import once committed what came before
// while the client was told RESOURCE_EXHAUSTED.
TEST_F(ImportStreamTest, AMessagePastTheSizeLimitStoresNothing) {
  ServerOptions options;
  options.listen_address = "127.0.0.1:0";
  options.max_message_bytes = 300'000;
  absl::StatusOr<std::unique_ptr<Server>> small =
      Server::Start(options, *store_, models::GpuCatalog::BuiltIn(), logger_);
  ASSERT_TRUE(small.ok()) << small.status();
  grpc::ChannelArguments args;
  args.SetMaxSendMessageSize(64 << 20);
  auto stub = v1::ProfileStore::NewStub(
      grpc::CreateCustomChannel(absl::StrCat("127.0.0.1:", (*small)->port()),
                                grpc::InsecureChannelCredentials(), args));
  std::vector<v1::ImportRequest> messages(2);
  *messages[0].add_nodes() = WireNode("n1", "H100-SXM5-80GB");
  for (int i = 0; i < 20; ++i) proto::ToProto(Profile("n1", i), messages[0].add_profiles());
  for (int i = 20; i < 5000; ++i) proto::ToProto(Profile("n1", i), messages[1].add_profiles());
  ASSERT_GT(messages[1].ByteSizeLong(), 300'000u);
  for (int attempt = 0; attempt < 10; ++attempt) {
    grpc::ClientContext context;
    v1::ImportResponse response;
    auto stream = stub->Import(&context, &response);
    for (const v1::ImportRequest& message : messages) {
      if (!stream->Write(message)) break;
    }
    stream->WritesDone();
    grpc::Status status = stream->Finish();
    EXPECT_EQ(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << status.error_message();
    absl::StatusOr<int64_t> count = store_->CountProfiles({});
    ASSERT_TRUE(count.ok());
    EXPECT_EQ(*count, 0) << "attempt " << attempt;
  }
}

}  // namespace
}  // namespace perfcast::server
