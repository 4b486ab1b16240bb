// Import throughput: profiles per second through the gRPC client stream into
// SQLite (a real perfcastd server in this process, on loopback), against the
// raw in-process insert rate of the same store code on the same records, in
// one run. Prints both and their ratio.
//
//   import_bench [--profiles=N] [--batch=B]
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/match.h"
#include "db/store.h"
#include "grpcpp/grpcpp.h"
#include "models/gpu_catalog.h"
#include "perfcast/v1/profile_store.grpc.pb.h"
#include "proto/convert.h"
#include "server/logger.h"
#include "server/server.h"

namespace {

using Clock = std::chrono::steady_clock;

std::vector<perfcast::models::Profile> MakeProfiles(int n) {
  std::vector<perfcast::models::Profile> profiles;
  profiles.reserve(n);
  const char* families[] = {"lstm", "cnn", "transformer", "resnet", "dlrm", "stgcn"};
  for (int i = 0; i < n; ++i) {
    perfcast::models::Profile p;
    p.node_name = "bench-" + std::to_string(i % 4);
    p.workload.family = families[i % 6];
    p.workload.params = {{"layers", 1 + (i / 6) % 8}};
    if (p.workload.family == "resnet" || p.workload.family == "stgcn") {
      p.workload.params = {{"blocks", 1 + (i / 6) % 2}};
    }
    if (p.workload.family == "dlrm") p.workload.params = {{"tables", 1 + (i / 6) % 8}};
    p.workload.batch_size = 16 << ((i / 48) % 5);
    p.workload.precision = static_cast<perfcast::models::Precision>((i / 240) % 4);
    const double ms = 1.0 + (i % 1000) * 0.01;
    p.iteration = {.count = 50, .mean_ms = ms, .median_ms = ms, .p95_ms = ms * 1.05,
                   .stddev_ms = ms * 0.01, .min_ms = ms * 0.97, .max_ms = ms * 1.1};
    p.phases.forward_ms = ms * 0.3;
    p.phases.backward_ms = ms * 0.6;
    p.measured_at_us = 1'760'000'000'000'000 + i;  // distinct runs
    p.agent_version = "bench";
    profiles.push_back(std::move(p));
  }
  return profiles;
}

perfcast::models::Node BenchNode(int i) {
  perfcast::models::Node node;
  node.name = "bench-" + std::to_string(i);
  node.gpu = *perfcast::models::GpuCatalog::BuiltIn().Find("H100-SXM5-80GB");
  return node;
}

double Seconds(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace

int main(int argc, char** argv) {
  int n = 200'000;
  int batch = 5'000;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (absl::StartsWith(arg, "--profiles=")) (void)absl::SimpleAtoi(arg.substr(11), &n);
    if (absl::StartsWith(arg, "--batch=")) (void)absl::SimpleAtoi(arg.substr(8), &batch);
  }
  const auto dir = std::filesystem::temp_directory_path() / ("import-bench-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  std::vector<perfcast::models::Profile> profiles = MakeProfiles(n);

  // Raw: the store's own import transaction, in process.
  double raw_rate = 0;
  {
    auto store = perfcast::db::OpenStore((dir / "raw.db").string());
    if (!store.ok()) return 1;
    auto start = Clock::now();
    auto tx = (*store)->BeginImport();
    for (int i = 0; i < 4; ++i) (void)(*tx)->UpsertNode(BenchNode(i));
    for (int i = 0; i < n; ++i) (void)(*tx)->Add(i, profiles[i]);
    auto summary = (*tx)->Commit();
    raw_rate = n / Seconds(start);
    if (!summary.ok() || summary->accepted != n) {
      std::fprintf(stderr, "raw import failed: %s\n",
                   summary.ok() ? (*summary).rejected.empty() ? "?" : (*summary).rejected[0].reason.c_str()
                                : std::string(summary.status().message()).c_str());
      return 1;
    }
  }

  // Through gRPC: pre-encoded requests, streamed to a real server.
  std::vector<perfcast::v1::ImportRequest> requests;
  for (int i = 0; i < n; i += batch) {
    perfcast::v1::ImportRequest& request = requests.emplace_back();
    if (i == 0) {
      for (int k = 0; k < 4; ++k) perfcast::proto::ToProto(BenchNode(k), request.add_nodes());
    }
    for (int j = i; j < std::min(n, i + batch); ++j) {
      perfcast::proto::ToProto(profiles[j], request.add_profiles());
    }
  }
  auto store = perfcast::db::OpenStore((dir / "grpc.db").string());
  if (!store.ok()) return 1;
  perfcast::server::Logger logger(perfcast::server::LogLevel::kWarning);
  auto server = perfcast::server::Server::Start({.listen_address = "127.0.0.1:0"}, **store,
                                                perfcast::models::GpuCatalog::BuiltIn(), logger);
  if (!server.ok()) return 1;
  grpc::ChannelArguments args;
  args.SetMaxSendMessageSize(64 << 20);
  auto channel = grpc::CreateCustomChannel("127.0.0.1:" + std::to_string((*server)->port()),
                                           grpc::InsecureChannelCredentials(), args);
  auto stub = perfcast::v1::ProfileStore::NewStub(channel);
  grpc::ClientContext context;
  perfcast::v1::ImportResponse response;
  auto start = Clock::now();
  auto writer = stub->Import(&context, &response);
  for (const auto& request : requests) writer->Write(request);
  writer->WritesDone();
  grpc::Status status = writer->Finish();
  const double grpc_rate = n / Seconds(start);
  if (!status.ok() || response.accepted() != n) {
    std::fprintf(stderr, "gRPC import failed: %s\n", status.error_message().c_str());
    return 1;
  }
  (*server)->Shutdown(absl::ZeroDuration());
  std::filesystem::remove_all(dir);

  std::printf("import_bench: %d profiles, %d per stream message, SQLite WAL synchronous=FULL\n", n,
              batch);
  std::printf("  raw in-process store insert : %10.0f profiles/s\n", raw_rate);
  std::printf("  gRPC client stream -> SQLite: %10.0f profiles/s\n", grpc_rate);
  std::printf("  ratio gRPC / raw            : %10.2f\n", grpc_rate / raw_rate);
  return 0;
}
