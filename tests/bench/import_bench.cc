// Import throughput: profiles per second through the gRPC client stream into
// SQLite (a real perfcastd server in this process, on loopback), against the
// raw in-process insert rate of the same store code on the same records, in
// one run. Prints both and their ratio, and the rate of SQLite alone: the
// store's INSERT of profile rows with no perfcast code per row, which bounds
// the store's writer thread.
//
//   import_bench [--profiles=N] [--batch=B]
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "db/sqlite_handle.h"
#include "db/store.h"
#include "db/store_rules.h"
#include "models/profile_columns.h"
#include "grpcpp/grpcpp.h"
#include "models/gpu_catalog.h"
#include "perfcast/v1/profile_store.grpc.pb.h"
#include "proto/convert.h"
#include "server/logger.h"
#include "server/server.h"

namespace {

using Clock = std::chrono::steady_clock;

// Rows per INSERT statement of the store's import (kProfilesPerInsert in
// db/sqlite_store.cc).
constexpr int kStoreRowsPerInsert = 32;

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

// A well-mixed 64-bit value of `x` (splitmix64): content hashes are random.
uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9;
  x = (x ^ (x >> 27)) * 0x94d049bb133111eb;
  return x ^ (x >> 31);
}

// Rows/s of the store's profile INSERT of `rows` into a fresh store at
// `path`, in one transaction with its commit, on the writer's settings: each
// row's columns bound as the store binds them, with a random hash and node
// and workload ids spread as in the benchmark, `per_statement` rows per
// INSERT as sqlite_store.cc writes them (the last group cut short by its
// LIMIT); 1 is the one-row INSERT the store used before. No validation,
// hashing, id lookups or foreign-key checks, as in an import: the rate the
// store's writer thread could reach if it did nothing else.
double SqliteAloneRate(const std::string& path,
                       const std::vector<perfcast::models::Profile>& rows, int per_statement) {
  if (!perfcast::db::OpenStore(path).ok()) return 0;  // the schema
  auto c = perfcast::db::Connection::Open(path, perfcast::db::Connection::Mode::kReadWriteCreate);
  if (!c.ok()) return 0;
  perfcast::db::Connection& db = **c;
  if (!db.Execute("PRAGMA synchronous = FULL; PRAGMA temp_store = MEMORY; "
                  "PRAGMA cache_size = -65536; PRAGMA wal_autocheckpoint = 0")
           .ok()) {
    return 0;
  }
  const int columns = static_cast<int>(perfcast::models::ProfileColumns().size());
  const int width = 3 + columns;
  const bool grouped = per_statement > 1;
  std::string sql =
      absl::StrCat("INSERT OR FAIL INTO profiles (content_hash, node_id, workload_id, ",
                   perfcast::db::ProfileColumnList(), grouped ? ") SELECT * FROM (VALUES " : ") VALUES ");
  for (int row = 0; row < per_statement; ++row) {
    absl::StrAppend(&sql, row > 0 ? ", (" : "(");
    for (int i = 1; i <= width; ++i) absl::StrAppend(&sql, i > 1 ? ", ?" : "?", row * width + i);
    absl::StrAppend(&sql, ")");
  }
  if (grouped) absl::StrAppend(&sql, ") LIMIT ?", per_statement * width + 1);
  absl::StrAppend(&sql, " ON CONFLICT (content_hash) DO NOTHING");
  auto insert = db.Prepare(sql);
  if (!insert.ok()) return 0;
  perfcast::db::Statement& s = **insert;
  const int n = static_cast<int>(rows.size());
  auto run = [&](int staged) {
    if (grouped) s.Bind(per_statement * width + 1, int64_t{staged});
    return s.Run().ok();
  };
  const auto start = Clock::now();
  if (!db.Execute("BEGIN IMMEDIATE").ok()) return 0;
  for (int r = 0; r < n; ++r) {
    const int base = (r % per_statement) * width;
    const uint64_t hash[2] = {Mix(2 * r), Mix(2 * r + 1)};
    s.BindBlob(base + 1, absl::string_view(reinterpret_cast<const char*>(hash), sizeof hash));
    s.Bind(base + 2, int64_t{1 + r % 4}).Bind(base + 3, int64_t{1 + r % 800});
    for (int i = 0; i < columns; ++i) {
      std::visit(
          [&](const auto* value) {
            if constexpr (std::is_same_v<decltype(value), const int*>) {
              s.Bind(base + 4 + i, int64_t{*value});
            } else {
              s.Bind(base + 4 + i, *value);
            }
          },
          perfcast::models::FieldOf(perfcast::models::ProfileColumns()[i], rows[r]));
    }
    if (r % per_statement == per_statement - 1 && !run(per_statement)) return 0;
  }
  if (n % per_statement != 0 && !run(n % per_statement)) return 0;
  if (!db.Execute("COMMIT").ok()) return 0;
  return n / Seconds(start);
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
  const double sqlite_one_rate = SqliteAloneRate((dir / "sqlite1.db").string(), profiles, 1);
  const double sqlite_rate =
      SqliteAloneRate((dir / "sqlite.db").string(), profiles, kStoreRowsPerInsert);
  std::filesystem::remove_all(dir);

  std::printf("import_bench: %d profiles, %d per stream message, SQLite WAL synchronous=FULL\n", n,
              batch);
  std::printf("  raw in-process store insert : %10.0f profiles/s\n", raw_rate);
  std::printf("  gRPC client stream -> SQLite: %10.0f profiles/s\n", grpc_rate);
  std::printf("  ratio gRPC / raw            : %10.2f\n", grpc_rate / raw_rate);
  std::printf("  SQLite alone, 1 row/INSERT  : %10.0f rows/s (the store's INSERT before)\n",
              sqlite_one_rate);
  std::printf("  SQLite alone, %d rows/INSERT: %10.0f rows/s (the store's; bounds its writer)\n",
              kStoreRowsPerInsert, sqlite_rate);
  return 0;
}
