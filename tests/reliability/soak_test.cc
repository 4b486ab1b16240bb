// Load on loopback: 16 clients, each on a connection of its own, mix
// Predict, PredictBatch, Import and node registration against one perfcastd
// for a fixed time. The only errors allowed are the intended ones (a
// duplicate registration answered ALREADY_EXISTS); per-RPC counts and
// latencies and perfcastd's resident memory are printed; the memory must
// stay bounded. Then the same load runs again and perfcastd gets SIGTERM in
// the middle of it: every call must end OK or with a clean UNAVAILABLE /
// CANCELLED / ABORTED, the server must exit 0 within its grace period, and
// the file must be sound, with every acknowledged import whole and no
// import in part.
//
// Environment (README.md): PERFCAST_SOAK_SECONDS (default 20),
// PERFCAST_SOAK_CLIENTS (default 16), PERFCAST_SOAK_SEED (default: clock).
#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <array>
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
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "perfcast/v1/node_registry.grpc.pb.h"
#include "perfcast/v1/predictor.grpc.pb.h"
#include "perfcast/v1/profile_store.grpc.pb.h"
#include "proto/convert.h"
#include "tests/db/test_util.h"
#include "tests/integration/process_harness.h"
#include "tests/reliability/store_check.h"

namespace perfcast::testing {
namespace {

constexpr char kGrace[] = "3s";
constexpr auto kGraceDuration = std::chrono::seconds(3);
// Exit within the grace period plus this: the store's close and the
// process's teardown.
constexpr auto kExitSlack = std::chrono::seconds(10);
constexpr auto kCallDeadline = std::chrono::seconds(20);
constexpr char kImportPrefix[] = "soak-";
constexpr char kRegisterPrefix[] = "reg-";

int EnvInt(const char* name, int fallback) {
  const char* value = std::getenv(name);
  return value != nullptr && *value ? std::atoi(value) : fallback;
}

enum Rpc { kPredict, kPredictBatch, kImport, kRegister, kRpcCount };
constexpr std::array<const char*, kRpcCount> kRpcNames = {"Predict", "PredictBatch", "Import",
                                                          "Register"};

// What one client saw; merged after the run.
struct ClientLog {
  std::array<std::vector<double>, kRpcCount> latency_ms;
  std::array<int64_t, kRpcCount> intended_errors{};
  std::array<int64_t, kRpcCount> clean_failures{};  // UNAVAILABLE/CANCELLED/ABORTED in shutdown
  // Calls that began before SIGTERM and ended after it: how they ended.
  std::array<int64_t, kRpcCount> in_flight_ok{};
  std::array<int64_t, kRpcCount> in_flight_clean{};
  std::vector<std::string> unexpected;             // "<rpc>: <code> <message>"
  std::map<std::string, int64_t> imports_started;  // node -> profiles
  std::set<std::string> imports_acknowledged;
  std::set<std::string> registered;  // acknowledged registrations
};

struct LoadControl {
  std::atomic<bool> stop{false};
  // Set just before SIGTERM: from then on clean shutdown codes are expected.
  std::atomic<bool> terminating{false};
  std::atomic<int> in_flight{0};
};

const std::vector<std::string>& CatalogTargets() {
  static const auto* kTargets = new std::vector<std::string>{
      "H100-SXM5-80GB", "H200-SXM-141GB", "L40S-48GB", "A100-SXM4-80GB", "L4-24GB"};
  return *kTargets;
}

// Distinct questions (the server answers a repeated one from a one-second
// cache, which would measure the cache, not the predictor).
v1::PredictRequest MakeQuery(std::mt19937_64& rng) {
  v1::PredictRequest query;
  v1::Workload* w = query.mutable_workload();
  w->set_kind(v1::WORKLOAD_KIND_MODEL);
  switch (rng() % 3) {
    case 0:
      w->set_family("lstm");
      (*w->mutable_params())["layers"] = 1 + static_cast<int64_t>(rng() % 8);
      (*w->mutable_params())["hidden"] = 32 << (rng() % 5);
      break;
    case 1:
      w->set_family("cnn");
      (*w->mutable_params())["layers"] = 1 + static_cast<int64_t>(rng() % 8);
      (*w->mutable_params())["channels"] = 16 << (rng() % 5);
      break;
    default:
      w->set_family("transformer");
      (*w->mutable_params())["layers"] = 1 + static_cast<int64_t>(rng() % 6);
      (*w->mutable_params())["hidden"] = 128 << (rng() % 3);
      break;
  }
  w->set_batch_size(1 + static_cast<int64_t>(rng() % 1024));
  w->set_precision(rng() % 2 == 0 ? v1::PRECISION_FP32 : v1::PRECISION_BF16_AMP);
  w->set_phase(rng() % 2 == 0 ? v1::PHASE_TRAIN : v1::PHASE_INFERENCE);
  if (rng() % 4 == 0) {
    query.set_node_name("h100-sxm-1");
  } else {
    query.set_catalog_gpu(CatalogTargets()[rng() % CatalogTargets().size()]);
  }
  query.mutable_job()->set_iterations(1 + static_cast<int64_t>(rng() % 10000));
  return query;
}

bool IsCleanShutdownCode(grpc::StatusCode code) {
  return code == grpc::StatusCode::UNAVAILABLE || code == grpc::StatusCode::CANCELLED ||
         code == grpc::StatusCode::ABORTED;
}

// Runs mixed calls until `control.stop`.
void RunClient(const std::string& address, int id, uint64_t seed, LoadControl& control,
               ClientLog& log) {
  std::mt19937_64 rng(seed);
  // Its own connection: channels with equal arguments would share one.
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  args.SetInt("perfcast.soak_client", id);
  auto channel = grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args);
  auto predictor = v1::Predictor::NewStub(channel);
  auto profiles = v1::ProfileStore::NewStub(channel);
  auto registry = v1::NodeRegistry::NewStub(channel);
  int imports = 0, registrations = 0;
  std::string last_registered;

  while (!control.stop.load()) {
    const int pick = static_cast<int>(rng() % 100);
    const Rpc rpc = pick < 50   ? kPredict
                    : pick < 65 ? kPredictBatch
                    : pick < 80 ? kImport
                                : kRegister;
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + kCallDeadline);
    grpc::Status status;
    bool intended_error = false;
    std::string problem;  // an answer that is OK but wrong
    std::string import_node;
    int64_t import_size = 0;
    const auto start = std::chrono::steady_clock::now();
    const bool began_before_signal = !control.terminating.load();
    ++control.in_flight;
    switch (rpc) {
      case kPredict: {
        v1::PredictResponse response;
        status = predictor->Predict(&context, MakeQuery(rng), &response);
        if (status.ok() && !(response.iteration_ms() > 0)) problem = "non-positive prediction";
        // A varied query may ask for a step larger than the GPU's memory.
        intended_error = status.error_code() == grpc::StatusCode::FAILED_PRECONDITION &&
                         absl::StrContains(status.error_message(), "does not fit");
        break;
      }
      case kPredictBatch: {
        auto stream = predictor->PredictBatch(&context);
        int sent = 0;
        const int messages = 1 + static_cast<int>(rng() % 3);
        for (int m = 0; m < messages; ++m) {
          v1::PredictBatchRequest request;
          request.set_brief(rng() % 2 == 0);
          const int queries = 10 + static_cast<int>(rng() % 41);
          for (int q = 0; q < queries; ++q) *request.add_queries() = MakeQuery(rng);
          if (!stream->Write(request)) break;
          sent += queries;
        }
        stream->WritesDone();
        v1::PredictBatchResponse response;
        int received = 0;
        while (stream->Read(&response)) {
          for (const v1::PredictResult& result : response.results()) {
            ++received;
            const bool does_not_fit =
                result.code() == grpc::StatusCode::FAILED_PRECONDITION &&
                absl::StrContains(result.error(), "does not fit");
            if (result.code() != 0 && !does_not_fit && problem.empty()) {
              problem = absl::StrCat("query failed: ", result.code(), " ", result.error());
            }
          }
        }
        status = stream->Finish();
        if (status.ok() && received != sent && problem.empty()) {
          problem = absl::StrCat(received, " results for ", sent, " queries");
        }
        break;
      }
      case kImport: {
        import_node = absl::StrFormat("%sc%02d-i%05d", kImportPrefix, id, imports++);
        import_size = 20 + static_cast<int64_t>(rng() % 81);
        log.imports_started[import_node] = import_size;
        v1::ImportRequest request;
        proto::ToProto(SampleNode(import_node), request.add_nodes());
        for (int i = 0; i < import_size; ++i) {
          proto::ToProto(SampleProfile(import_node, i), request.add_profiles());
        }
        v1::ImportResponse response;
        auto writer = profiles->Import(&context, &response);
        if (writer->Write(request)) writer->WritesDone();
        status = writer->Finish();
        if (status.ok() && response.accepted() != import_size) {
          problem = absl::StrCat("accepted ", response.accepted(), " of ", import_size);
        }
        if (status.ok()) log.imports_acknowledged.insert(import_node);
        break;
      }
      case kRegister: {
        // Every fifth registration repeats an acknowledged name on purpose.
        const bool duplicate = !last_registered.empty() && rng() % 5 == 0;
        const std::string name =
            duplicate ? last_registered
                      : absl::StrFormat("%sc%02d-%05d", kRegisterPrefix, id, registrations++);
        v1::RegisterNodeRequest request;
        request.set_name(name);
        request.set_catalog_gpu(CatalogTargets()[rng() % CatalogTargets().size()]);
        (*request.mutable_labels())["pool"] = absl::StrCat("p", rng() % 4);
        v1::RegisterNodeResponse response;
        status = registry->Register(&context, request, &response);
        if (duplicate) {
          intended_error = status.error_code() == grpc::StatusCode::ALREADY_EXISTS;
          if (status.ok()) problem = "duplicate name accepted";
        } else if (status.ok()) {
          log.registered.insert(name);
          last_registered = name;
        }
        break;
      }
      default:
        break;
    }
    --control.in_flight;
    if (began_before_signal && control.terminating.load()) {
      if (status.ok() || intended_error) ++log.in_flight_ok[rpc];
      if (!status.ok() && IsCleanShutdownCode(status.error_code())) ++log.in_flight_clean[rpc];
    }
    log.latency_ms[rpc].push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
            .count());
    if (!problem.empty()) {
      log.unexpected.push_back(absl::StrCat(kRpcNames[rpc], ": ", problem));
    } else if (intended_error) {
      ++log.intended_errors[rpc];
    } else if (!status.ok()) {
      if (control.terminating.load() && IsCleanShutdownCode(status.error_code())) {
        ++log.clean_failures[rpc];
        // The server is going or gone: do not spin on a closed port.
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      } else {
        log.unexpected.push_back(
            absl::StrCat(kRpcNames[rpc], ": ", status.error_code(), " ", status.error_message()));
      }
    }
  }
}

double Percentile(std::vector<double>& values, double p) {
  if (values.empty()) return 0;
  const size_t k = std::min(values.size() - 1, static_cast<size_t>(p * values.size()));
  std::nth_element(values.begin(), values.begin() + static_cast<ptrdiff_t>(k), values.end());
  return values[k];
}

// Prints the per-RPC table; returns the unexpected errors (their texts).
std::vector<std::string> Report(const char* title, std::vector<ClientLog>& logs, double seconds) {
  std::vector<std::string> unexpected;
  std::printf("%s (%zu clients, %.1f s)\n", title, logs.size(), seconds);
  std::printf("  %-13s %9s %8s %9s %9s %9s %9s %9s\n", "rpc", "calls", "calls/s", "p50 ms",
              "p99 ms", "max ms", "intended", "shutdown");
  int64_t total = 0;
  for (int rpc = 0; rpc < kRpcCount; ++rpc) {
    std::vector<double> all;
    int64_t intended = 0, clean = 0;
    for (ClientLog& log : logs) {
      all.insert(all.end(), log.latency_ms[rpc].begin(), log.latency_ms[rpc].end());
      intended += log.intended_errors[rpc];
      clean += log.clean_failures[rpc];
    }
    total += static_cast<int64_t>(all.size());
    const double max = all.empty() ? 0 : *std::max_element(all.begin(), all.end());
    const double p50 = Percentile(all, 0.50);
    const double p99 = Percentile(all, 0.99);
    std::printf("  %-13s %9zu %8.1f %9.2f %9.2f %9.2f %9lld %9lld\n", kRpcNames[rpc], all.size(),
                all.size() / seconds, p50, p99, max, static_cast<long long>(intended),
                static_cast<long long>(clean));
  }
  for (const ClientLog& log : logs) {
    unexpected.insert(unexpected.end(), log.unexpected.begin(), log.unexpected.end());
  }
  std::printf("  total %lld calls, %zu unexpected errors\n", static_cast<long long>(total),
              unexpected.size());
  int64_t in_flight_ok = 0, in_flight_clean = 0;
  for (const ClientLog& log : logs) {
    for (int rpc = 0; rpc < kRpcCount; ++rpc) {
      in_flight_ok += log.in_flight_ok[rpc];
      in_flight_clean += log.in_flight_clean[rpc];
    }
  }
  if (in_flight_ok + in_flight_clean > 0) {
    std::printf(
        "  calls in flight at SIGTERM: %lld finished OK, %lld ended "
        "UNAVAILABLE/CANCELLED/ABORTED\n",
        static_cast<long long>(in_flight_ok), static_cast<long long>(in_flight_clean));
  }
  return unexpected;
}

// Acknowledged imports whole, the others whole or absent, nothing foreign;
// acknowledged registrations present. Returns the number of batches checked.
int64_t ExpectImportsWholeOrAbsent(const std::string& database,
                                   const std::vector<ClientLog>& logs) {
  absl::StatusOr<std::map<std::string, int64_t>> stored = ProfilesPerNode(database, kImportPrefix);
  EXPECT_TRUE(stored.ok()) << stored.status();
  absl::StatusOr<std::map<std::string, int64_t>> nodes = ProfilesPerNode(database, kRegisterPrefix);
  EXPECT_TRUE(nodes.ok()) << nodes.status();
  if (!stored.ok() || !nodes.ok()) return 0;
  int64_t checked = 0;
  std::set<std::string> started;
  for (const ClientLog& log : logs) {
    for (const auto& [batch, size] : log.imports_started) {
      started.insert(batch);
      auto it = stored->find(batch);
      const int64_t count = it == stored->end() ? -1 : it->second;
      if (log.imports_acknowledged.contains(batch)) {
        EXPECT_EQ(count, size) << "acknowledged import " << batch << " not whole";
      } else {
        EXPECT_TRUE(count == -1 || count == size)
            << "import " << batch << " partially stored: " << count << " of " << size;
      }
      ++checked;
    }
    for (const std::string& name : log.registered) {
      EXPECT_TRUE(nodes->contains(name)) << "acknowledged registration " << name << " lost";
    }
  }
  for (const auto& [batch, count] : *stored) {
    EXPECT_TRUE(started.contains(batch)) << "unknown import node " << batch;
  }
  return checked;
}

class SoakTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    database_ = new std::string(dir_->File("soak.db"));
    server_ = new ServerProcess(*database_, {absl::StrCat("--shutdown_grace=", kGrace)});
    ASSERT_TRUE(server_->started());
    CommandResult r = server_->Cli({"import", std::string(PERFCAST_DATA_DIR) + "/h100.sqlite"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    r = server_->Cli({"fit", "--gpu", "H100-SXM5-80GB"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    seed_ = std::getenv("PERFCAST_SOAK_SEED") != nullptr
                ? std::strtoull(std::getenv("PERFCAST_SOAK_SEED"), nullptr, 10)
                : std::random_device()();
    std::printf("soak: seed %llu\n", static_cast<unsigned long long>(seed_));
  }
  static void TearDownTestSuite() {
    delete server_;
    delete database_;
    delete dir_;
  }

  // Starts `clients` load threads; logs_ holds what each saw.
  void StartLoad(int clients, uint64_t seed) {
    logs_.assign(static_cast<size_t>(clients), ClientLog());
    for (int c = 0; c < clients; ++c) {
      threads_.emplace_back(RunClient, server_->address(), c + clients * static_cast<int>(round_),
                            seed + static_cast<uint64_t>(c), std::ref(control_),
                            std::ref(logs_[static_cast<size_t>(c)]));
    }
    ++round_;
    load_started_ = std::chrono::steady_clock::now();
  }
  void SigtermUnderLoad(const char* title, bool stall_an_import, uint64_t seed);
  void StopLoad() {
    control_.stop = true;
    for (std::thread& t : threads_) t.join();
    threads_.clear();
  }

  static TempDir* dir_;
  static std::string* database_;
  static ServerProcess* server_;
  static uint64_t seed_;
  static std::vector<ClientLog>* all_logs_;  // every round, for the final check
  static uint64_t round_;
  LoadControl control_;
  std::vector<ClientLog> logs_;
  std::vector<std::thread> threads_;
  std::chrono::steady_clock::time_point load_started_;
};
TempDir* SoakTest::dir_ = nullptr;
std::string* SoakTest::database_ = nullptr;
ServerProcess* SoakTest::server_ = nullptr;
uint64_t SoakTest::seed_ = 0;
std::vector<ClientLog>* SoakTest::all_logs_ = new std::vector<ClientLog>();
uint64_t SoakTest::round_ = 0;

TEST_F(SoakTest, MixedLoadHasNoUnexpectedErrorsAndBoundedMemory) {
  const int seconds = std::max(2, EnvInt("PERFCAST_SOAK_SECONDS", 20));
  const int clients = std::max(1, EnvInt("PERFCAST_SOAK_CLIENTS", 16));
  const auto warm_up = std::chrono::milliseconds(std::min(3000, seconds * 150));
  StartLoad(clients, seed_);
  std::this_thread::sleep_for(warm_up);
  const int64_t start_kib = ResidentKib(server_->pid());
  int64_t peak_kib = start_kib;
  const auto begin = std::chrono::steady_clock::now();
  const auto end = begin + std::chrono::seconds(seconds);
  std::vector<int64_t> samples_kib;  // every 250 ms
  while (std::chrono::steady_clock::now() < end) {
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
    samples_kib.push_back(ResidentKib(server_->pid()));
    peak_kib = std::max(peak_kib, samples_kib.back());
  }
  const int64_t end_kib = ResidentKib(server_->pid());
  StopLoad();
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count() +
      std::chrono::duration<double>(warm_up).count();

  const std::vector<std::string> unexpected = Report("soak", logs_, elapsed);
  std::printf(
      "  perfcastd VmRSS: start (after %.1f s warm-up) %.1f MiB, end %.1f MiB, peak %.1f MiB\n",
      std::chrono::duration<double>(warm_up).count(), start_kib / 1024.0, end_kib / 1024.0,
      peak_kib / 1024.0);
  // The trend: a plateau is caches filling up, a steady climb a leak.
  std::printf("  VmRSS MiB at each tenth of the run:");
  for (size_t tenth = 1; tenth <= 10 && !samples_kib.empty(); ++tenth) {
    std::printf(" %.0f", samples_kib[(samples_kib.size() - 1) * tenth / 10] / 1024.0);
  }
  std::printf("\n");
  for (size_t i = 0; i < std::min<size_t>(unexpected.size(), 20); ++i) {
    ADD_FAILURE() << "unexpected: " << unexpected[i];
  }
  EXPECT_TRUE(unexpected.empty()) << unexpected.size() << " unexpected errors";
  ASSERT_GT(start_kib, 0);
  // Caches and pools are capped (SQLite page cache 64 MiB, reader pool,
  // answer cache, request threads): growth beyond these is a leak.
  EXPECT_LE(peak_kib, std::max(2 * start_kib, start_kib + 256 * 1024));
  int64_t calls = 0;
  for (const ClientLog& log : logs_) calls += static_cast<int64_t>(log.latency_ms[kPredict].size());
  EXPECT_GT(calls, 0);
  const int64_t batches = ExpectImportsWholeOrAbsent(*database_, logs_);
  std::printf("  imports checked in the store: %lld\n", static_cast<long long>(batches));
  all_logs_->insert(all_logs_->end(), logs_.begin(), logs_.end());
}

// SIGTERM while the clients run; with `stall_an_import`, one import stream
// is also left open (its client sends no end), which the grace period must
// cancel and roll back instead of waiting for it.
void SoakTest::SigtermUnderLoad(const char* title, bool stall_an_import, uint64_t seed) {
  const int clients = std::max(1, EnvInt("PERFCAST_SOAK_CLIENTS", 16));
  std::mt19937_64 rng(seed);
  StartLoad(clients, seed + 7919);
  std::this_thread::sleep_for(std::chrono::milliseconds(1000 + rng() % 2000));
  const std::string stalled_node = absl::StrCat(kImportPrefix, "stalled");
  auto stalled_stub = v1::ProfileStore::NewStub(
      grpc::CreateChannel(server_->address(), grpc::InsecureChannelCredentials()));
  grpc::ClientContext stalled_context;
  stalled_context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
  v1::ImportResponse stalled_response;
  std::unique_ptr<grpc::ClientWriter<v1::ImportRequest>> stalled;
  if (stall_an_import) {
    stalled = stalled_stub->Import(&stalled_context, &stalled_response);
    v1::ImportRequest request;
    proto::ToProto(SampleNode(stalled_node), request.add_nodes());
    for (int i = 0; i < 100; ++i)
      proto::ToProto(SampleProfile(stalled_node, i), request.add_profiles());
    ASSERT_TRUE(stalled->Write(request));
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  control_.terminating = true;
  const int in_flight = control_.in_flight.load();
  const auto signalled = std::chrono::steady_clock::now();
  server_->Signal(SIGTERM);
  const std::optional<int> status = server_->WaitExit(
      std::chrono::duration_cast<std::chrono::milliseconds>(kGraceDuration + kExitSlack));
  const double exit_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - signalled).count();
  StopLoad();  // calls carry deadlines, so this is bounded too
  const std::vector<std::string> unexpected = Report(
      title, logs_,
      std::chrono::duration<double>(std::chrono::steady_clock::now() - load_started_).count());
  std::printf("  clients in a call at SIGTERM %d; perfcastd exited in %.2f s (grace %s)\n",
              in_flight, exit_s, kGrace);
  ASSERT_TRUE(status.has_value()) << "perfcastd still running " << exit_s << " s after SIGTERM";
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0) << *status;
  for (size_t i = 0; i < std::min<size_t>(unexpected.size(), 20); ++i) {
    ADD_FAILURE() << "unexpected: " << unexpected[i];
  }
  EXPECT_TRUE(unexpected.empty()) << unexpected.size() << " unexpected errors";
  if (stall_an_import) {
    stalled->WritesDone();
    const grpc::Status stalled_status = stalled->Finish();
    EXPECT_FALSE(stalled_status.ok());
    EXPECT_TRUE(IsCleanShutdownCode(stalled_status.error_code()))
        << stalled_status.error_code() << " " << stalled_status.error_message();
    std::printf("  the import stream left open ended with code %d (%s)\n",
                stalled_status.error_code(), stalled_status.error_message().c_str());
  }

  EXPECT_EQ(CheckIntegrity(*database_), "ok");
  absl::StatusOr<std::map<std::string, int64_t>> stalled_rows =
      ProfilesPerNode(*database_, stalled_node);
  ASSERT_TRUE(stalled_rows.ok()) << stalled_rows.status();
  EXPECT_TRUE(stalled_rows->empty()) << "the unfinished import left its node behind";
  all_logs_->insert(all_logs_->end(), logs_.begin(), logs_.end());
  const int64_t batches = ExpectImportsWholeOrAbsent(*database_, *all_logs_);
  std::printf("  imports checked in the store after the shutdown: %lld\n",
              static_cast<long long>(batches));
  // The store opens again and serves, for the next test too.
  delete server_;
  server_ = new ServerProcess(*database_, {absl::StrCat("--shutdown_grace=", kGrace)});
  ASSERT_TRUE(server_->started());
  CommandResult r = server_->Cli({"nodes", "list", "--gpu", "L4-24GB"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

TEST_F(SoakTest, SigtermUnderLoadEndsEveryCallCleanly) {
  SigtermUnderLoad("SIGTERM under load", /*stall_an_import=*/false, seed_ + 1);
}

TEST_F(SoakTest, SigtermUnderLoadCancelsAStalledImportAfterTheGrace) {
  SigtermUnderLoad("SIGTERM under load, one import stalled", /*stall_an_import=*/true, seed_ + 2);
}

}  // namespace
}  // namespace perfcast::testing
