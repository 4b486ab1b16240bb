// perfcastd killed with SIGKILL at random moments while a client streams
// imports. After every kill the file must pass integrity_check, every batch
// the server acknowledged must be stored in full, no batch may be stored in
// part, and a perfcastd restarted on the same file must open it and serve.
//
// A batch is one Import stream of 500-2,000 distinct profiles for a node of
// its own, named crash-t<trial>-b<batch>, that the stream itself registers:
// so the node row and the profile count tell whether the batch is absent,
// whole or partial. The acknowledgement is the stream's OK summary.
//
// Environment (README.md): PERFCAST_CRASH_TRIALS (default 50),
// PERFCAST_CRASH_SEED (default: from the clock; printed, so that the kill
// delays of a failed run can be replayed), PERFCAST_CRASH_TRIALS_PER_FILE
// (default 10: the same file takes that many kills, then a fresh one starts).
#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "perfcast/v1/node_registry.grpc.pb.h"
#include "perfcast/v1/profile_store.grpc.pb.h"
#include "proto/convert.h"
#include "tests/db/test_util.h"
#include "tests/integration/process_harness.h"
#include "tests/reliability/store_check.h"

namespace perfcast::testing {
namespace {

constexpr char kBatchPrefix[] = "crash-";
constexpr int kProfilesPerMessage = 250;
// Kill delays are uniform in [0, kMaxKillDelayMs) after the client starts:
// long enough for several batches, so kills land before the first stream,
// inside streams, during commits and between streams.
constexpr int kMaxKillDelayMs = 400;

int EnvInt(const char* name, int fallback) {
  const char* value = std::getenv(name);
  return value != nullptr && *value ? std::atoi(value) : fallback;
}

// Where the client was when the kill was sent.
enum class Phase { kNotStarted, kStreaming, kCommitting, kBetween };

const char* PhaseName(Phase phase) {
  switch (phase) {
    case Phase::kNotStarted:
      return "before the first stream";
    case Phase::kStreaming:
      return "mid-stream (sending)";
    case Phase::kCommitting:
      return "mid-stream (end sent, awaiting commit/ack)";
    case Phase::kBetween:
      return "between streams";
  }
  return "?";
}

// What the client knows about the batches of one database file.
struct Ledger {
  absl::Mutex mu;
  std::map<std::string, int64_t> started ABSL_GUARDED_BY(mu);  // batch -> profiles
  std::set<std::string> acknowledged ABSL_GUARDED_BY(mu);
  std::string last_acknowledged ABSL_GUARDED_BY(mu);
};

// Streams batches to `address` until the server goes away or `stop` is set.
void StreamBatches(const std::string& address, int trial, uint64_t seed, Ledger& ledger,
                   std::atomic<Phase>& phase, const std::atomic<bool>& stop) {
  std::mt19937_64 rng(seed);
  auto stub =
      v1::ProfileStore::NewStub(grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
  for (int b = 0; !stop.load(); ++b) {
    const std::string node = absl::StrFormat("%st%03d-b%03d", kBatchPrefix, trial, b);
    const int size = 500 + static_cast<int>(rng() % 1501);
    {
      absl::MutexLock lock(&ledger.mu);
      ledger.started[node] = size;
    }
    phase = Phase::kStreaming;
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    v1::ImportResponse response;
    std::unique_ptr<grpc::ClientWriter<v1::ImportRequest>> writer =
        stub->Import(&context, &response);
    bool sent = true;
    for (int first = 0; first < size && sent; first += kProfilesPerMessage) {
      v1::ImportRequest request;
      if (first == 0) proto::ToProto(SampleNode(node), request.add_nodes());
      for (int i = first; i < std::min(size, first + kProfilesPerMessage); ++i) {
        proto::ToProto(SampleProfile(node, i), request.add_profiles());
      }
      sent = writer->Write(request);
    }
    phase = Phase::kCommitting;
    if (sent) writer->WritesDone();
    const grpc::Status status = writer->Finish();
    if (!status.ok()) return;  // the server is gone; the store decides the batch's fate
    EXPECT_EQ(response.accepted(), size) << node;
    EXPECT_EQ(response.rejected_size(), 0) << node;
    {
      absl::MutexLock lock(&ledger.mu);
      ledger.acknowledged.insert(node);
      ledger.last_acknowledged = node;
    }
    phase = Phase::kBetween;
    std::this_thread::sleep_for(std::chrono::milliseconds(rng() % 20));
  }
}

// Nodes named with `prefix`, through the API (every page).
int64_t ListNodesWithPrefix(const std::string& address, const std::string& prefix) {
  auto stub =
      v1::NodeRegistry::NewStub(grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
  int64_t count = 0;
  std::string token;
  do {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    v1::ListNodesRequest request;
    request.set_page_size(1000);
    request.set_page_token(token);
    v1::ListNodesResponse response;
    const grpc::Status status = stub->List(&context, request, &response);
    if (!status.ok()) {
      ADD_FAILURE() << "ListNodes: " << status.error_message();
      return -1;
    }
    for (const v1::Node& node : response.nodes()) count += node.name().rfind(prefix, 0) == 0;
    token = response.next_page_token();
  } while (!token.empty());
  return count;
}

int64_t ExportCount(const std::string& address, const std::string& node) {
  auto stub =
      v1::ProfileStore::NewStub(grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  v1::ExportRequest request;
  request.set_node_name(node);
  auto reader = stub->Export(&context, request);
  v1::ExportResponse batch;
  int64_t count = 0;
  while (reader->Read(&batch)) count += batch.profiles_size();
  const grpc::Status status = reader->Finish();
  EXPECT_TRUE(status.ok()) << status.error_message();
  return count;
}

grpc::Status RegisterNode(const std::string& address, const std::string& name) {
  auto stub =
      v1::NodeRegistry::NewStub(grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  v1::RegisterNodeRequest request;
  request.set_name(name);
  request.set_catalog_gpu("H100-SXM5-80GB");
  v1::RegisterNodeResponse response;
  return stub->Register(&context, request, &response);
}

// Failed assertions so far in this test (gtest records only failures).
int FailureCount() {
  return ::testing::UnitTest::GetInstance()->current_test_info()->result()->total_part_count();
}

TEST(CrashHarnessTest, AcknowledgedImportsSurviveSigkill) {
  const int trials = EnvInt("PERFCAST_CRASH_TRIALS", 50);
  const int trials_per_file = std::max(1, EnvInt("PERFCAST_CRASH_TRIALS_PER_FILE", 10));
  const uint64_t seed = std::getenv("PERFCAST_CRASH_SEED") != nullptr
                            ? std::strtoull(std::getenv("PERFCAST_CRASH_SEED"), nullptr, 10)
                            : std::random_device()();
  std::printf("crash harness: %d trials, seed %llu (replay with PERFCAST_CRASH_SEED=%llu)\n",
              trials, static_cast<unsigned long long>(seed), static_cast<unsigned long long>(seed));
  std::mt19937_64 rng(seed);

  TempDir dir;
  std::string database;
  std::unique_ptr<ServerProcess> server;
  auto ledger = std::make_unique<Ledger>();
  std::map<Phase, int> kills;
  int survived = 0;
  int64_t acknowledged_batches = 0, acknowledged_profiles = 0;
  int unacknowledged_present = 0, unacknowledged_absent = 0;
  const auto start = std::chrono::steady_clock::now();

  for (int trial = 0; trial < trials; ++trial) {
    const std::string context = absl::StrCat("trial ", trial, ", seed ", seed);
    const int failures_before = FailureCount();
    if (trial % trials_per_file == 0) {
      server.reset();
      database = dir.File(absl::StrCat("crash-", trial / trials_per_file, ".db"));
      ledger = std::make_unique<Ledger>();
      server = std::make_unique<ServerProcess>(database);
      ASSERT_TRUE(server->started()) << context;
    }
    // The server runs: fresh, or restarted after the previous trial's kill.
    const int delay_ms = static_cast<int>(rng() % kMaxKillDelayMs);
    std::atomic<Phase> phase{Phase::kNotStarted};
    std::atomic<bool> stop{false};
    std::thread client(StreamBatches, server->address(), trial, rng(), std::ref(*ledger),
                       std::ref(phase), std::cref(stop));
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
    const Phase at_kill = phase.load();
    const int status = server->Kill(SIGKILL);
    ++kills[at_kill];
    // Anything but our SIGKILL means the server died on its own.
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << context << ": " << status;
    stop = true;
    client.join();

    // 1. The file is sound before anything touches it.
    EXPECT_EQ(CheckIntegrity(database), "ok") << context;
    // 2. A restarted server opens it (recovering the WAL) and serves.
    server = std::make_unique<ServerProcess>(database);
    ASSERT_TRUE(server->started()) << context << ": perfcastd did not restart on the file";
    // 3. Every batch of this file is whole or absent; acknowledged ones whole.
    absl::StatusOr<std::map<std::string, int64_t>> stored = ProfilesPerNode(database, kBatchPrefix);
    ASSERT_TRUE(stored.ok()) << context << ": " << stored.status();
    std::string last_acknowledged;
    int64_t expected_last = 0;
    {
      absl::MutexLock lock(&ledger->mu);
      for (const auto& [batch, size] : ledger->started) {
        auto it = stored->find(batch);
        const int64_t count = it == stored->end() ? -1 : it->second;  // -1: no node row
        if (ledger->acknowledged.contains(batch)) {
          EXPECT_EQ(count, size) << context << ": acknowledged batch " << batch << " not whole";
        } else {
          EXPECT_TRUE(count == -1 || count == size)
              << context << ": batch " << batch << " partially stored: " << count << " of " << size;
        }
        if (batch.rfind(absl::StrFormat("%st%03d-", kBatchPrefix, trial), 0) == 0) {
          if (ledger->acknowledged.contains(batch)) {
            ++acknowledged_batches;
            acknowledged_profiles += size;
          } else if (count == size) {
            ++unacknowledged_present;  // committed; the kill took the ack in flight
          } else {
            ++unacknowledged_absent;
          }
        }
      }
      for (const auto& [batch, count] : *stored) {
        EXPECT_TRUE(ledger->started.contains(batch)) << context << ": unknown node " << batch;
      }
      last_acknowledged = ledger->last_acknowledged;
      if (!last_acknowledged.empty()) expected_last = ledger->started[last_acknowledged];
    }
    // 4. The API sees the same store and takes writes.
    EXPECT_EQ(ListNodesWithPrefix(server->address(), kBatchPrefix),
              static_cast<int64_t>(stored->size()))
        << context;
    if (!last_acknowledged.empty()) {
      EXPECT_EQ(ExportCount(server->address(), last_acknowledged), expected_last) << context;
    }
    const grpc::Status probe = RegisterNode(server->address(), absl::StrCat("probe-t", trial));
    EXPECT_TRUE(probe.ok()) << context << ": " << probe.error_message();
    survived += FailureCount() == failures_before;
  }
  server.reset();

  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("crash harness: %d of %d trials survived in %.1f s (seed %llu)\n", survived, trials,
              elapsed, static_cast<unsigned long long>(seed));
  for (const auto& [where, count] : kills) {
    std::printf("  kills %-44s %4d\n", PhaseName(where), count);
  }
  std::printf("  acknowledged batches %lld (%lld profiles), all present in full\n",
              static_cast<long long>(acknowledged_batches),
              static_cast<long long>(acknowledged_profiles));
  std::printf("  unacknowledged batches: %d absent, %d present in full (ack lost in flight)\n",
              unacknowledged_absent, unacknowledged_present);
  EXPECT_EQ(survived, trials);
  // The harness must exercise kills inside streams, not only around them.
  EXPECT_GT(kills[Phase::kStreaming] + kills[Phase::kCommitting], 0);
}

}  // namespace
}  // namespace perfcast::testing
