// perfcast --local (issue 31): predict and recommend answered with no
// perfcastd, through perfcastd's own services in the CLI's process, on a
// model fitted on the shipped profiles and cached; the answer is the one a
// perfcastd gives on the same data. perfcast memory needs no server at all.
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/db/test_util.h"
#include "tests/integration/process_harness.h"

namespace perfcast::testing {
namespace {

namespace fs = std::filesystem;

// No perfcastd listens here: a call that tried to reach one would fail.
constexpr char kNoServer[] = "127.0.0.1:1";

std::vector<std::string> ShippedFiles(const std::string& data_dir) {
  std::ifstream in(data_dir + "/shipped-profiles.txt");
  std::vector<std::string> files;
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line[0] != '#') files.push_back(data_dir + "/" + line);
  }
  return files;
}

int CacheEntries(const fs::path& cache) {
  int n = 0;
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(cache / "perfcast", error)) {
    const std::string name = entry.path().filename().string();
    n += absl::StartsWith(name, "local-") && absl::EndsWith(name, ".db") ? 1 : 0;
  }
  return n;
}

// Runs `argv` with stdout and stderr to /dev/null: its exit status and its
// peak resident memory in KiB.
std::pair<int, long> RunMeasured(const std::vector<std::string>& argv) {
  const pid_t pid = fork();
  if (pid == 0) {
    const int null = open("/dev/null", O_WRONLY);
    dup2(null, STDOUT_FILENO);
    dup2(null, STDERR_FILENO);
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  int status = 0;
  rusage usage{};
  wait4(pid, &status, 0, &usage);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, usage.ru_maxrss};
}

class LocalModeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(setenv("XDG_CACHE_HOME", cache_.path().c_str(), 1), 0);
    ASSERT_EQ(unsetenv("PERFCAST_SHIPPED_DATA"), 0);
  }
  void TearDown() override { unsetenv("PERFCAST_SHIPPED_DATA"); }

  static CommandResult Local(std::vector<std::string> args) {
    std::vector<std::string> argv = {PERFCAST_CLI_PATH, "--server", kNoServer};
    argv.insert(argv.end(), args.begin(), args.end());
    return RunCommand(argv);
  }

  TempDir cache_;
  TempDir dir_;
};

const std::vector<std::string> kLstmOnL40s = {
    "--family", "lstm", "--param", "layers=4", "--param", "hidden=512", "--batch", "256",
    "--precision", "bf16-amp", "--phase", "train", "--gpu", "L40S", "--samples", "1000000",
    "--epochs", "30", "-o", "json"};

std::vector<std::string> With(std::vector<std::string> base, std::vector<std::string> more) {
  base.insert(base.end(), more.begin(), more.end());
  return base;
}

TEST_F(LocalModeTest, AnswersWithoutAServerAsTheServerDoesOnTheSameData) {
  const std::string gpt2 = std::string(PERFCAST_HF_CONFIGS) + "/gpt2.json";
  const std::vector<std::string> gpt2_on_a100 = {
      "--hf-config", gpt2, "--batch", "8", "--seq-len", "1024", "--precision", "bf16-amp",
      "--phase", "train", "--gpu", "A100-SXM4-80GB", "--iterations", "100000", "-o", "json"};
  const std::vector<std::string> recommend = {
      "recommend", "--family", "decoder", "--batch", "8", "--precision", "bf16-amp",
      "--phase", "train", "--iterations", "100000", "--deadline", "48h", "-o", "json"};

  // First use: fitted now, and says so on stderr; stdout is the answer alone.
  CommandResult cold = Local(With({"predict", "--local"}, kLstmOnL40s));
  ASSERT_EQ(cold.exit_code, 0) << cold.err;
  EXPECT_NE(cold.err.find("fitted now"), std::string::npos) << cold.err;
  EXPECT_NE(cold.err.find("shipped-profiles.txt"), std::string::npos) << cold.err;
  EXPECT_NE(cold.err.find((cache_.path() / "perfcast").string()), std::string::npos) << cold.err;
  ASSERT_TRUE(nlohmann::json::accept(cold.out)) << cold.out;
  EXPECT_EQ(CacheEntries(cache_.path()), 1);
  // Then cached: the same answer, nothing fitted.
  CommandResult warm = Local(With({"predict", "--local"}, kLstmOnL40s));
  ASSERT_EQ(warm.exit_code, 0) << warm.err;
  EXPECT_EQ(warm.err.find("fitted now"), std::string::npos) << warm.err;
  EXPECT_NE(warm.err.find("cached in"), std::string::npos) << warm.err;
  EXPECT_EQ(warm.out, cold.out);
  CommandResult local_gpt2 = Local(With({"predict", "--local"}, gpt2_on_a100));
  ASSERT_EQ(local_gpt2.exit_code, 0) << local_gpt2.err;
  CommandResult local_recommend = Local(With(recommend, {"--local"}));
  ASSERT_EQ(local_recommend.exit_code, 0) << local_recommend.err;

  // A perfcastd given the same files and the same fit (`make demo`'s).
  ServerProcess server(dir_.File("perfcast.db"));
  ASSERT_TRUE(server.started());
  CommandResult imported = server.Cli(With({"import"}, ShippedFiles(PERFCAST_DATA_DIR)));
  ASSERT_EQ(imported.exit_code, 0) << imported.err;
  CommandResult fitted = server.Cli({"fit", "--gpu", "H200-SXM-141GB"});
  ASSERT_EQ(fitted.exit_code, 0) << fitted.err;
  CommandResult served = server.Cli(With({"predict"}, kLstmOnL40s));
  ASSERT_EQ(served.exit_code, 0) << served.err;
  EXPECT_EQ(nlohmann::json::parse(served.out), nlohmann::json::parse(cold.out));
  served = server.Cli(With({"predict"}, gpt2_on_a100));
  ASSERT_EQ(served.exit_code, 0) << served.err;
  EXPECT_EQ(nlohmann::json::parse(served.out), nlohmann::json::parse(local_gpt2.out));
  served = server.Cli(recommend);
  ASSERT_EQ(served.exit_code, 0) << served.err;
  EXPECT_EQ(nlohmann::json::parse(served.out), nlohmann::json::parse(local_recommend.out));
}

TEST_F(LocalModeTest, NewDataFitsAgainAndReplacesTheEntry) {
  // A data directory of the H200's newest-method files alone.
  const fs::path data = dir_.path() / "data";
  fs::create_directories(data);
  std::ofstream list(data / "shipped-profiles.txt");
  for (const char* file : {"h200-m7-sizes.sqlite", "h200-m10-default.sqlite",
                           "h200-m12-architectures.sqlite"}) {
    fs::copy_file(fs::path(PERFCAST_DATA_DIR) / file, data / file);
    list << file << "\n";
  }
  list.close();
  ASSERT_EQ(setenv("PERFCAST_SHIPPED_DATA", data.c_str(), 1), 0);
  CommandResult first = Local(With({"predict", "--local"}, kLstmOnL40s));
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_NE(first.err.find("fitted now"), std::string::npos) << first.err;
  EXPECT_NE(first.err.find("3 shipped files"), std::string::npos) << first.err;

  std::ofstream(data / "shipped-profiles.txt", std::ios::app) << "# changed\n";
  CommandResult again = Local(With({"predict", "--local"}, kLstmOnL40s));
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_NE(again.err.find("fitted now"), std::string::npos) << again.err;
  EXPECT_EQ(CacheEntries(cache_.path()), 1);
}

TEST_F(LocalModeTest, MissingDataAndBadInputAreOneLineErrors) {
  ASSERT_EQ(setenv("PERFCAST_SHIPPED_DATA", dir_.File("nowhere").c_str(), 1), 0);
  CommandResult r = Local(With({"predict", "--local"}, kLstmOnL40s));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("shipped-profiles.txt"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_EQ(r.out, "");
  ASSERT_EQ(unsetenv("PERFCAST_SHIPPED_DATA"), 0);

  // Usage errors: the error alone.
  r = Local({"predict", "--local", "--family", "lstm", "--batch", "8", "--gpu", "H2000",
             "--iterations", "10"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_NE(r.err.find("H2000"), std::string::npos) << r.err;
  r = Local({"recommend", "--local", "--family", "lstmm", "--batch", "8", "--iterations", "10"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  // The command's own checks (here a missing --batch) come before the fit.
  r = Local({"predict", "--local", "--family", "lstm", "--gpu", "H200", "--iterations", "10"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("--batch"), std::string::npos) << r.err;
  EXPECT_EQ(CacheEntries(cache_.path()), 0) << "a usage error fitted the local model";
}

// Issue 31, D3: predict --batch-file held every row's answer (5.5 KB a row).
// Answers stream a message at a time, so 20 times the rows take about the
// same memory (here the CLI and the services it calls in one process).
TEST_F(LocalModeTest, BatchFileMemoryDoesNotGrowWithTheRows) {
  auto write_rows = [this](int rows) {
    const std::string path = dir_.File(absl::StrCat("rows-", rows, ".csv"));
    std::ofstream out(path);
    out << "family,params,batch_size,gpu,iterations\n";
    for (int i = 0; i < rows; ++i) {
      out << "lstm,layers=2;hidden=" << 256 + (i % 50) * 8 << "," << 32 + i % 7
          << ",L40S-48GB,1000\n";
    }
    return path;
  };
  auto run = [](const std::string& file) {
    return RunMeasured({PERFCAST_CLI_PATH, "--server", kNoServer, "predict", "--batch-file",
                        file, "--local", "-o", "json"});
  };
  const auto [few_status, few_kib] = run(write_rows(3'000));
  ASSERT_EQ(few_status, 0);
  const auto [many_status, many_kib] = run(write_rows(60'000));
  ASSERT_EQ(many_status, 0);
  // Kept answers would add about 300 MiB.
  EXPECT_LT(many_kib, few_kib + 100 * 1024) << few_kib << " KiB for 3,000 rows";
}

TEST_F(LocalModeTest, MemorySaysWhatFitsWithNoServer) {
  CommandResult r = Local({"memory", "--family", "decoder", "--batch", "8", "--gpu",
                           "H100-SXM5-80GB", "-o", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["gpus"][0]["gpu"], "H100-SXM5-80GB");
  EXPECT_EQ(doc["gpus"][0]["fits"], true);
  EXPECT_GT(doc["gpus"][0]["free_bytes"].get<double>(), 0);
  EXPECT_GT(doc["per_gpu_bytes"]["activations"].get<double>(), 0);
  EXPECT_EQ(CacheEntries(cache_.path()), 0);  // no model needed

  // Llama-2-7B with Adam on one 24 GB GPU: does not fit (exit 3), and the
  // table names the change that would.
  const std::string llama = std::string(PERFCAST_HF_CONFIGS) + "/llama-2-7b.json";
  r = Local({"memory", "--hf-config", llama, "--seq-len", "4096", "--batch", "8",
             "--precision", "bf16-amp", "--gpu", "L4", "--gpu", "H200"});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("does not fit"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("required per GPU"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("--zero 3"), std::string::npos) << r.out;
  // The change it names fits.
  r = Local({"memory", "--hf-config", llama, "--seq-len", "4096", "--batch", "8",
             "--precision", "bf16-amp", "--gpu", "H200", "--data-parallel", "2", "--zero", "3",
             "--activation-checkpointing", "-o", "csv"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("ZeRO-3"), std::string::npos) << r.out;

  // Completion knows the command and its flags.
  r = Local({"__complete", "--", "mem"});
  EXPECT_EQ(r.out, "memory\n");
  r = Local({"__complete", "--", "memory", "--activation-"});
  EXPECT_EQ(r.out, "--activation-checkpointing\n");
  r = Local({"__complete", "--", "predict", "--loc"});
  EXPECT_EQ(r.out, "--local\n");

  // Bad input: one line, exit 2.
  for (const std::vector<std::string>& bad :
       {std::vector<std::string>{"memory", "--family", "decoder", "--batch", "8", "--zero", "3"},
        std::vector<std::string>{"memory", "--family", "decodr", "--batch", "8"},
        std::vector<std::string>{"memory", "--family", "decoder"},
        std::vector<std::string>{"memory", "--family", "decoder", "--batch", "8", "--gpu", "H100"},
        std::vector<std::string>{"memory", "--family", "decoder", "--batch", "6",
                                 "--data-parallel", "4"}}) {
    r = Local(bad);
    EXPECT_EQ(r.exit_code, 2) << bad.back() << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_EQ(r.out, "");
  }
}

}  // namespace
}  // namespace perfcast::testing
