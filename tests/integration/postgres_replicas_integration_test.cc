// Two perfcastd replicas on one PostgreSQL database, as a fleet runs them:
// what is imported, fitted or registered through one is served by the other.
// The PostgreSQL server is real and throw-away (tests/db/postgres_server.h).
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <functional>
#include <memory>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "db/store.h"
#include "gtest/gtest.h"
#include "tests/db/postgres_server.h"
#include "tests/db/test_util.h"
#include "tests/environment_gap.h"
#include "tests/integration/process_harness.h"

namespace perfcast::testing {
namespace {

constexpr char kNode[] = "h100-sxm-1";  // the node of data/h100.sqlite

std::string DataFile() { return std::string(PERFCAST_DATA_DIR) + "/h100.sqlite"; }

// The number in `"key":N` of the CLI's JSON output, or -1.
int64_t JsonCount(const std::string& out, const std::string& key) {
  std::smatch m;
  if (!std::regex_search(out, m, std::regex("\"" + key + "\":([0-9]+)"))) return -1;
  return std::stoll(m[1]);
}

// Calls `attempt` until it returns true or `seconds` pass: replicas cache
// nodes and models for about a second (PredictorService::kNodeRecheck).
bool Eventually(const std::function<bool()>& attempt, int seconds = 10) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  while (!attempt()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return true;
}

class PostgresReplicasIntegrationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<PostgresServer*> server = SharedPostgresServer();
    if (absl::IsNotFound(server.status()) && !PostgresRequired()) {
      SKIP_FOR_ENVIRONMENT_GAP() << server.status().message();
    }
    ASSERT_TRUE(server.ok()) << server.status();
    absl::StatusOr<std::string> uri = (*server)->CreateDatabase();
    ASSERT_TRUE(uri.ok()) << uri.status();
    uri_ = *uri;
    a_ = std::make_unique<ServerProcess>(uri_);
    b_ = std::make_unique<ServerProcess>(uri_);
    ASSERT_TRUE(a_->started() && b_->started());
  }

  // Starts `perfcast --output json import DataFile()` against `server` without
  // waiting; its standard output goes to `out`.
  pid_t StartImport(const ServerProcess& server, const std::string& out) {
    std::vector<std::string> argv = {PERFCAST_CLI_PATH, "--server", server.address(), "--timeout",
                                     "60", "--output", "json", "import", DataFile()};
    std::vector<char*> args;
    for (std::string& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    pid_t pid = fork();
    if (pid == 0) {
      int fd = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      dup2(fd, STDOUT_FILENO);
      execv(args[0], args.data());
      _exit(127);
    }
    return pid;
  }

  std::string uri_;
  TempDir dir_;
  std::unique_ptr<ServerProcess> a_;
  std::unique_ptr<ServerProcess> b_;
};

TEST_F(PostgresReplicasIntegrationTest, ImportsThroughOneReplicaServePredictionsOfTheOther) {
  // The truth comes from the file itself, not from either server.
  auto source = db::OpenStoreReadOnly(DataFile());
  ASSERT_TRUE(source.ok()) << source.status();
  const int64_t profiles = *(*source)->CountProfiles({});
  ASSERT_GT(profiles, 1000);

  // The same file through both replicas at once: stored once.
  const std::string b_out = dir_.File("b-import.json");
  pid_t b_import = StartImport(*b_, b_out);
  CommandResult a_import = a_->Cli({"--output", "json", "import", DataFile()});
  int status = 0;
  waitpid(b_import, &status, 0);
  ASSERT_EQ(a_import.exit_code, 0) << a_import.err;
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  std::stringstream b_json;
  b_json << std::ifstream(b_out).rdbuf();
  EXPECT_EQ(JsonCount(a_import.out, "accepted") + JsonCount(b_json.str(), "accepted"), profiles)
      << a_import.out << b_json.str();
  EXPECT_EQ(JsonCount(a_import.out, "duplicates") + JsonCount(b_json.str(), "duplicates"), profiles);

  // Either replica exports all of them.
  for (ServerProcess* server : {a_.get(), b_.get()}) {
    CommandResult exported = server->Cli({"export", "--format", "jsonl"});
    ASSERT_EQ(exported.exit_code, 0) << exported.err;
    EXPECT_EQ(std::count(exported.out.begin(), exported.out.end(), '\n'), profiles);
  }

  // Fit through A, predict through B.
  CommandResult fit = a_->Cli({"fit"});
  ASSERT_EQ(fit.exit_code, 0) << fit.err;
  CommandResult prediction;
  EXPECT_TRUE(Eventually([&] {
    prediction = b_->Cli({"predict", "--family", "lstm", "--param", "layers=4", "--batch", "64",
                          "--precision", "bf16-amp", "--node", kNode, "--iterations", "100"});
    return prediction.exit_code == 0;
  })) << prediction.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(prediction.out, m, std::regex(R"(: ([0-9.]+) ms per iteration)")))
      << prediction.out;
  EXPECT_GT(std::stod(m[1]), 0);
  CommandResult models = b_->Cli({"models", "list"});
  ASSERT_EQ(models.exit_code, 0) << models.err;
  EXPECT_NE(models.out.find("default"), std::string::npos) << models.out;
}

TEST_F(PostgresReplicasIntegrationTest, NodesRegisteredThroughOneReplicaAreSeenByTheOther) {
  CommandResult registered = b_->Cli({"nodes", "register", "--name", "l40s-1", "--gpu", "L40S-48GB"});
  ASSERT_EQ(registered.exit_code, 0) << registered.err;
  CommandResult got;
  EXPECT_TRUE(Eventually([&] {
    got = a_->Cli({"nodes", "get", "l40s-1"});
    return got.exit_code == 0;
  })) << got.err;
  EXPECT_NE(got.out.find("L40S-48GB"), std::string::npos) << got.out;

  CommandResult again = a_->Cli({"nodes", "register", "--name", "l40s-1", "--gpu", "L40S-48GB"});
  EXPECT_NE(again.exit_code, 0);
  EXPECT_NE(again.err.find("ALREADY_EXISTS"), std::string::npos) << again.err;

  ASSERT_EQ(a_->Cli({"nodes", "remove", "l40s-1"}).exit_code, 0);
  CommandResult gone;
  EXPECT_TRUE(Eventually([&] {
    gone = b_->Cli({"nodes", "get", "l40s-1"});
    return gone.exit_code != 0;
  }));
  EXPECT_NE(gone.err.find("NOT_FOUND"), std::string::npos) << gone.err;
}

}  // namespace
}  // namespace perfcast::testing
