// perfcast-agent killed with SIGKILL at random moments of a CPU campaign:
// its local store must stay a valid SQLite file and hold every configuration
// the agent reported as finished. The run loop commits each configuration in
// a transaction of its own and prints its "[i/N] key: result" line only
// after that commit (profiler/runner.cc), so a printed line is a promise
// that the profile is stored; at most one stored profile (committed, its
// line cut off by the kill) may lack a line.
//
// All trials extend one file, each as a node of its own (agent-t<trial>), so
// every run also reopens a file that a killed agent left behind.
//
// Environment (README.md): PERFCAST_AGENT_CRASH_TRIALS (default 40: the run
// loop in a fork), PERFCAST_AGENT_BINARY_CRASH_TRIALS (default 2: the binary,
// whose every start costs seconds), PERFCAST_AGENT_CRASH_SEED (default: from
// the clock; printed).
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "db/sqlite_store.h"
#include "db/store.h"
#include "gtest/gtest.h"
#include "models/workload.h"
#include "profiler/fingerprint.h"
#include "profiler/plan.h"
#include "profiler/runner.h"
#include "profiler/torch_measurer.h"
#include "tests/reliability/store_check.h"

namespace perfcast::testing {
namespace {

// Small operations and two tiny models: each configuration takes
// milliseconds on one CPU thread, so a campaign of a few seconds holds
// dozens of commits for the kills to land between and inside.
constexpr char kPlan[] = R"({
  "name": "crash",
  "timing": {"warmup": 1, "repeats": 2, "min_iterations": 1, "max_iterations": 3,
             "target_repeat_ms": 5, "op_repeats": 2, "op_target_block_ms": 1, "op_max_calls": 50},
  "grids": [
    {"family": "gemm", "params": {"m": [16, 32, 64, 128, 256], "n": [16, 64, 128], "k": [32, 64],
     "batch": 1}, "precision": ["fp32"]},
    {"family": "lstm", "params": {"layers": [1, 2], "hidden": [8, 16], "nodes": 4,
     "seq_len": 4, "horizon": 2}, "batch": [2, 4]}
  ]
})";

int EnvInt(const char* name, int fallback) {
  const char* value = std::getenv(name);
  return value != nullptr && *value ? std::atoi(value) : fallback;
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// A child process killed or awaited by the test: either the real agent
// binary (exec) or the agent's run loop in a fork of this test, which skips
// LibTorch's load and the rate micro-benchmarks (seconds per start) so that
// many kills fit in a CI budget. Its standard error (the progress) goes to `log`.
class Child {
 public:
  // Runs perfcast-agent with `args`.
  static std::unique_ptr<Child> Exec(const std::vector<std::string>& args, const std::string& log) {
    return std::unique_ptr<Child>(new Child(log, [&] {
      std::vector<std::string> argv = {PERFCAST_AGENT_PATH};
      argv.insert(argv.end(), args.begin(), args.end());
      std::vector<char*> raw;
      for (std::string& a : argv) raw.push_back(a.data());
      raw.push_back(nullptr);
      execv(raw[0], raw.data());
      return 127;
    }));
  }
  // Runs `body` in a fork; its return value is the exit code.
  static std::unique_ptr<Child> Fork(const std::function<int()>& body, const std::string& log) {
    return std::unique_ptr<Child>(new Child(log, body));
  }
  ~Child() {
    if (pid_ > 0) Kill();
  }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  // The exit status if the child has ended, else nullopt.
  std::optional<int> Exited() {
    int status = 0;
    if (pid_ > 0 && waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      status_ = status;
    }
    return status_;
  }
  // SIGKILL (unless already ended), then the exit status.
  int Kill() {
    if (pid_ > 0) kill(pid_, SIGKILL);
    return Wait();
  }
  int Wait() {
    if (pid_ > 0) {
      int status = 0;
      waitpid(pid_, &status, 0);
      pid_ = -1;
      status_ = status;
    }
    return *status_;
  }

 private:
  Child(const std::string& log, const std::function<int()>& body) {
    // Emptied here, not in the child: a kill before the child opens the log
    // must not leave the previous run's lines to be read as this run's.
    std::ofstream(log, std::ios::trunc).flush();
    std::fflush(nullptr);  // the child must not repeat the parent's buffered output
    pid_ = fork();
    if (pid_ != 0) return;
    const int log_fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int null_fd = open("/dev/null", O_RDWR);
    dup2(null_fd, STDIN_FILENO);
    dup2(null_fd, STDOUT_FILENO);
    dup2(log_fd, STDERR_FILENO);
    _exit(body());
  }

  pid_t pid_ = -1;
  std::optional<int> status_;
};

// What `perfcast-agent run --device cpu --threads 1` does after its
// fingerprint, with the rates left unmeasured: register the node, then
// measure and commit each configuration, one progress line after each commit.
int RunCampaignInProcess(const std::string& plan_text, const std::string& store_path,
                         const std::string& node_name) {
  absl::StatusOr<profiler::RunPlan> plan = profiler::ParsePlanJson(plan_text);
  if (!plan.ok()) return 2;
  absl::StatusOr<std::vector<models::WorkloadSpec>> specs = profiler::ExpandPlan(*plan);
  if (!specs.ok()) return 2;
  profiler::DeviceOptions device{.device = "cpu", .threads = 1, .seed = 7};
  absl::StatusOr<models::Node> node = profiler::Fingerprint(device, node_name, false);
  if (!node.ok()) return 3;
  absl::StatusOr<std::unique_ptr<db::Store>> store = db::OpenSqliteAgentStore(store_path);
  if (!store.ok()) return 4;
  absl::StatusOr<std::unique_ptr<profiler::Measurer>> measurer =
      profiler::MakeTorchMeasurer(device, node->measured);
  if (!measurer.ok()) return 5;
  profiler::RunOptions options;
  options.progress = &std::cerr;
  std::cerr << "perfcast-agent: node " << node_name << ", " << specs->size() << " configurations"
            << std::endl;
  absl::StatusOr<profiler::RunSummary> summary =
      profiler::RunWorkloads(*specs, plan->timing, *node, **measurer, **store, options);
  return summary.ok() ? 0 : 6;
}

// The keys of the configurations the log reports as measured and stored;
// only whole lines count (the kill may cut the last one).
std::set<std::string> FinishedKeys(const std::string& log, int* skipped) {
  static const std::regex kLine(R"(^\[(\d+)/(\d+)\] (\S+): (.*)$)");
  std::set<std::string> keys;
  std::string text = ReadAll(log);
  std::istringstream lines(text);
  std::string line;
  size_t consumed = 0;
  while (std::getline(lines, line)) {
    consumed += line.size() + 1;
    if (consumed > text.size()) break;  // no newline: a line the kill cut
    std::smatch m;
    if (!std::regex_match(line, m, kLine)) continue;
    if (m[4].str().rfind("skipped: ", 0) == 0) {
      ++*skipped;
    } else {
      keys.insert(m[3].str());
    }
  }
  return keys;
}

using Clock = std::chrono::steady_clock;

int Millis(Clock::duration d) {
  return static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(d).count());
}

// Waits until the child printed its plan line (the campaign starts) or ended.
bool WaitForCampaign(Child& child, const std::string& log) {
  const auto deadline = Clock::now() + std::chrono::seconds(120);
  while (Clock::now() < deadline) {
    if (ReadAll(log).find(" configurations") != std::string::npos) return true;
    if (child.Exited().has_value()) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return false;
}

struct Tally {
  int trials = 0;
  int survived = 0;
  int during_startup = 0;  // before the first configuration was reported
  int mid_campaign = 0;
  int after_end = 0;
  int64_t finished = 0;    // reported configurations checked in the file
  int64_t unreported = 0;  // stored, line cut off by the kill
};

class AgentCrashTest : public ::testing::Test {
 protected:
  using Launch = std::function<std::unique_ptr<Child>(const std::string& node)>;

  void SetUp() override {
    dir_ = ::testing::TempDir() + absl::StrCat("agent_crash_", getpid());
    std::filesystem::create_directories(dir_);
    plan_ = dir_ + "/plan.json";
    std::ofstream(plan_) << kPlan;
    store_ = dir_ + "/agent.sqlite";
    log_ = dir_ + "/agent.log";
    const char* seed = std::getenv("PERFCAST_AGENT_CRASH_SEED");
    seed_ = seed != nullptr ? std::strtoull(seed, nullptr, 10) : std::random_device()();
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::vector<std::string> RunArgs(const std::string& node) const {
    return {"run", "--device", "cpu",  "--threads", "1", "--plan-file",
            plan_, "--out",    store_, "--name",    node};
  }

  // Runs one whole campaign (it must finish and store exactly what it
  // reported), then `trials` campaigns killed at random moments: one in
  // five during the start-up, the others inside the campaign.
  void KillCampaigns(const char* title, const Launch& launch, int trials) {
    std::printf("%s: %d trials, seed %llu (replay with PERFCAST_AGENT_CRASH_SEED=%llu)\n", title,
                trials, static_cast<unsigned long long>(seed_),
                static_cast<unsigned long long>(seed_));
    std::mt19937_64 rng(seed_);
    int startup_ms = 0, campaign_ms = 0, configurations = 0;
    {
      const auto begin = Clock::now();
      std::unique_ptr<Child> child = launch("agent-full");
      ASSERT_TRUE(WaitForCampaign(*child, log_)) << ReadAll(log_);
      const auto campaign = Clock::now();
      const int status = child->Wait();
      ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status << ReadAll(log_);
      startup_ms = std::max(1, Millis(campaign - begin));
      campaign_ms = std::max(1, Millis(Clock::now() - campaign));
      int skipped = 0;
      const std::set<std::string> finished = FinishedKeys(log_, &skipped);
      configurations = static_cast<int>(finished.size()) + skipped;
      ASSERT_GT(finished.size(), 10u) << ReadAll(log_);
      absl::StatusOr<std::set<std::string>> stored = WorkloadKeysOf(store_, "agent-full");
      ASSERT_TRUE(stored.ok()) << stored.status();
      EXPECT_EQ(*stored, finished);
    }

    Tally tally;
    for (int trial = 0; trial < trials; ++trial) {
      const std::string context = absl::StrCat(title, " trial ", trial, ", seed ", seed_);
      const int failures_before = FailureCount();
      const std::string node = absl::StrFormat("agent-t%02d", trial);
      const bool in_startup = rng() % 5 == 0;
      const int delay_ms =
          static_cast<int>(rng() % (in_startup ? startup_ms : campaign_ms * 11 / 10));
      std::unique_ptr<Child> child = launch(node);
      if (!in_startup) WaitForCampaign(*child, log_);
      std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
      const bool ended = child->Exited().has_value();
      const int status = child->Kill();
      if (ended) {
        EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << context << ReadAll(log_);
      }

      EXPECT_EQ(CheckIntegrity(store_), "ok") << context;
      int skipped = 0;
      const std::set<std::string> finished = FinishedKeys(log_, &skipped);
      absl::StatusOr<std::set<std::string>> stored = WorkloadKeysOf(store_, node);
      ASSERT_TRUE(stored.ok()) << context << ": " << stored.status();
      for (const std::string& key : finished) {
        EXPECT_TRUE(stored->contains(key)) << context << ": finished " << key << " not stored";
      }
      EXPECT_LE(stored->size(), finished.size() + 1) << context;
      tally.finished += static_cast<int64_t>(finished.size());
      tally.unreported +=
          static_cast<int64_t>(stored->size() - std::min(stored->size(), finished.size()));
      if (ended) {
        ++tally.after_end;
      } else if (finished.empty() && skipped == 0) {
        ++tally.during_startup;
      } else {
        ++tally.mid_campaign;
      }
      ++tally.trials;
      tally.survived += FailureCount() == failures_before;
    }
    // The file the kills left behind opens as a store.
    absl::StatusOr<std::unique_ptr<db::Store>> reopened = db::OpenSqliteAgentStore(store_);
    EXPECT_TRUE(reopened.ok()) << reopened.status();

    std::printf(
        "%s: %d of %d trials survived; a whole campaign: %d configurations, "
        "start-up %d ms, campaign %d ms\n",
        title, tally.survived, tally.trials, configurations, startup_ms, campaign_ms);
    std::printf("  kills during start-up %d, mid-campaign %d, after the end %d\n",
                tally.during_startup, tally.mid_campaign, tally.after_end);
    std::printf(
        "  reported configurations found in the file %lld; stored with the line cut off %lld\n",
        static_cast<long long>(tally.finished), static_cast<long long>(tally.unreported));
    EXPECT_EQ(tally.survived, tally.trials);
    if (trials >= 5) {
      EXPECT_GT(tally.mid_campaign, 0);
    }
  }

  static int FailureCount() {
    return ::testing::UnitTest::GetInstance()->current_test_info()->result()->total_part_count();
  }

  std::string dir_, plan_, store_, log_;
  uint64_t seed_ = 0;
};

// The real binary: each start loads LibTorch and measures the CPU's rates
// (seconds), so only a few kills.
TEST_F(AgentCrashTest, KilledAgentBinaryKeepsEveryFinishedConfiguration) {
  KillCampaigns(
      "agent binary", [&](const std::string& node) { return Child::Exec(RunArgs(node), log_); },
      EnvInt("PERFCAST_AGENT_BINARY_CRASH_TRIALS", 2));
}

// The same run loop and store code in a fork of this test: many kills.
TEST_F(AgentCrashTest, KilledRunLoopKeepsEveryFinishedConfiguration) {
  KillCampaigns(
      "agent run loop",
      [&](const std::string& node) {
        return Child::Fork([&, node] { return RunCampaignInProcess(kPlan, store_, node); }, log_);
      },
      EnvInt("PERFCAST_AGENT_CRASH_TRIALS", 40));
}

}  // namespace
}  // namespace perfcast::testing
