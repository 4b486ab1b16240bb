// The conventions a new user expects of perfcast, perfcastd and
// perfcast-agent (issue 14): flags after the subcommand, --version, named
// unknown commands, required options, a config file, completion, the GPU
// catalog, and the server's refusals of a busy port and of files that are
// not its database.
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/db/test_util.h"
#include "tests/integration/process_harness.h"

namespace perfcast::testing {
namespace {

class CliConventionsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = std::make_unique<ServerProcess>(dir_.File("perfcast.db"));
    ASSERT_TRUE(server_->started());
  }

  std::string WriteFile(const std::string& name, const std::string& text) {
    const std::string path = dir_.File(name);
    std::ofstream(path, std::ios::binary) << text;
    return path;
  }

  static std::string Slurp(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }

  TempDir dir_;
  std::unique_ptr<ServerProcess> server_;
};

TEST_F(CliConventionsTest, GlobalFlagsWorkAfterTheSubcommand) {
  ASSERT_EQ(server_->Cli({"nodes", "register", "--name", "n1", "--gpu", "H200"}).exit_code, 0);
  // Cli() puts --server first; -o after the subcommand is the point.
  CommandResult r = server_->Cli({"nodes", "list", "-o", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json node = nlohmann::json::parse(r.out);
  EXPECT_EQ(node["name"], "n1");
  // The unambiguous short name registered the one H200 of the catalog.
  EXPECT_EQ(node["gpu"]["model"], "H200-SXM-141GB");
  r = RunCommand({PERFCAST_CLI_PATH, "nodes", "get", "n1", "--server", server_->address(),
                  "--output", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["name"], "n1");
}

// "H100" names two catalog GPUs: a usage error (exit 2) naming the flag, in
// `nodes register` as in every other --gpu, and nothing registered.
TEST_F(CliConventionsTest, AnAmbiguousShortGpuNameIsAUsageError) {
  CommandResult r = server_->Cli({"nodes", "register", "--name", "n2", "--gpu", "H100"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("--gpu"), std::string::npos) << r.err;
  r = server_->Cli({"nodes", "list", "-o", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.find("n2"), std::string::npos) << r.out;
}

TEST_F(CliConventionsTest, VersionsAndHelpExitZero) {
  for (const char* binary : {PERFCAST_CLI_PATH, PERFCASTD_PATH}) {
    CommandResult r = RunCommand({binary, "--version"});
    EXPECT_EQ(r.exit_code, 0) << binary << r.err;
    EXPECT_NE(r.out.find("0."), std::string::npos) << binary << ": " << r.out;
    EXPECT_EQ(r.out.find("Debug build"), std::string::npos) << r.out;
  }
  CommandResult help = RunCommand({PERFCASTD_PATH, "--help"});
  EXPECT_EQ(help.exit_code, 0) << help.err;
  for (const char* flag : {"--listen", "--db", "--tls-cert", "--token-file", "--config"}) {
    EXPECT_NE(help.out.find(flag), std::string::npos) << flag << "\n" << help.out;
  }
  CommandResult predict = RunCommand({PERFCAST_CLI_PATH, "predict", "--help"});
  EXPECT_EQ(predict.exit_code, 0);
  EXPECT_NE(predict.out.find("Required"), std::string::npos) << predict.out;
}

TEST_F(CliConventionsTest, UnknownCommandsAreNamed) {
  CommandResult r = server_->Cli({"nodes", "lst"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("unknown command 'lst'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("list"), std::string::npos) << r.err;
  r = server_->Cli({"-o", "json", "nodez"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("unknown command 'nodez'"), std::string::npos) << r.err;
}

TEST_F(CliConventionsTest, PredictReportsTheFirstRealProblem) {
  // Wrong GPU and no job size: the GPU is named, before any server call.
  CommandResult r = server_->Cli({"predict", "--family", "lstm", "--gpu", "H900"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("H900"), std::string::npos) << r.err;
  r = server_->Cli({"predict", "--family", "lstm", "--gpu", "H100", "--batch", "8",
                    "--iterations", "5"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("ambiguous"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("H100-NVL-94GB"), std::string::npos) << r.err;
  r = server_->Cli({"predict", "--family", "lstm", "--gpu", "H200", "--batch", "8"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("job size is required"), std::string::npos) << r.err;
  // 2^64 is refused, not taken as 2^63-1.
  r = server_->Cli({"predict", "--family", "lstm", "--gpu", "H200", "--batch",
                    "18446744073709551616", "--iterations", "1"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("18446744073709551616"), std::string::npos) << r.err;
}

TEST_F(CliConventionsTest, SelectionsTakeShortGpuNamesToo) {
  // fit and evaluate select profiles by GPU as predict names one: "H200" is
  // the catalog's one H200, so the (empty) server is asked for that model.
  for (const char* command : {"fit", "evaluate"}) {
    CommandResult r = server_->Cli({command, "--gpu", "H200", "--exclude-gpu", "L4"});
    EXPECT_NE(r.exit_code, 0) << command;
    EXPECT_NE(r.err.find("gpu_models=H200-SXM-141GB"), std::string::npos) << command << r.err;
    EXPECT_NE(r.err.find("exclude_gpu_models=L4-24GB"), std::string::npos) << command << r.err;
    r = server_->Cli({command, "--gpu", "H100"});
    EXPECT_EQ(r.exit_code, 2) << command;
    EXPECT_NE(r.err.find("--gpu: "), std::string::npos) << command << r.err;
    EXPECT_NE(r.err.find("ambiguous"), std::string::npos) << command << r.err;
  }
}

TEST_F(CliConventionsTest, ConfigFileSuppliesFlags) {
  const std::string config =
      WriteFile("perfcast.toml", absl::StrCat("server = \"", server_->address(), "\"\n"
                                              "output = \"json\"\n"));
  ASSERT_EQ(server_->Cli({"nodes", "register", "--name", "n1", "--gpu", "L4"}).exit_code, 0);
  CommandResult r = RunCommand({PERFCAST_CLI_PATH, "--config", config, "nodes", "list"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["gpu"]["model"], "L4-24GB");
  // The command line wins over the file.
  r = RunCommand({PERFCAST_CLI_PATH, "--config", config, "nodes", "list", "-o", "table"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("NAME"), std::string::npos) << r.out;
}

TEST_F(CliConventionsTest, BashCompletionCompletesCommandsFlagsAndGpus) {
  CommandResult script = RunCommand({PERFCAST_CLI_PATH, "completion", "bash"});
  ASSERT_EQ(script.exit_code, 0) << script.err;
  const std::string path = WriteFile("perfcast.bash", script.out);
  auto complete = [&](const std::string& words, int cword) {
    return RunCommand({"/bin/bash", "-c",
                       absl::StrCat("source ", path, "; COMP_WORDS=(", PERFCAST_CLI_PATH, " ", words,
                                    "); COMP_CWORD=", cword,
                                    "; _perfcast; echo \"${COMPREPLY[*]}\"")});
  };
  CommandResult r = complete("nodes l", 2);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "list\n");
  r = complete("predict --gp", 2);
  EXPECT_EQ(r.out, "--gpu\n");
  r = complete("predict --gpu B2", 3);
  EXPECT_EQ(r.out, "B200-SXM-180GB\n");
  r = complete("g", 1);
  EXPECT_EQ(r.out, "gpus\n");
}

// Completion asks the binary (`perfcast __complete`), which asks the server
// for node names; zsh and fish scripts call the same.
TEST_F(CliConventionsTest, CompletionOffersNodeNamesFromTheServer) {
  ASSERT_EQ(server_->Cli({"nodes", "register", "--name", "rack1-h200", "--gpu", "H200"}).exit_code,
            0);
  CommandResult r = server_->Cli({"__complete", "--", "nodes", "get", "rack"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "rack1-h200\n");
  r = server_->Cli({"__complete", "--", "predict", "--node", ""});
  EXPECT_EQ(r.out, "rack1-h200\n");
  r = server_->Cli({"__complete", "--", "predict", "--family", "lst"});
  EXPECT_EQ(r.out, "lstm\n");
  for (const char* shell : {"zsh", "fish"}) {
    r = RunCommand({PERFCAST_CLI_PATH, "completion", shell});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("__complete --"), std::string::npos) << shell;
  }
  // Hidden from --help.
  r = RunCommand({PERFCAST_CLI_PATH, "--help"});
  EXPECT_EQ(r.out.find("__complete"), std::string::npos) << r.out;
}

// Every command answers in table, json, yaml or csv; a single answer is one
// JSON document, a list one JSON object per line.
TEST_F(CliConventionsTest, EveryOutputFormatWorks) {
  ASSERT_EQ(server_->Cli({"nodes", "register", "--name", "n1", "--gpu", "H200"}).exit_code, 0);
  ASSERT_EQ(server_->Cli({"nodes", "register", "--name", "n2", "--gpu", "L4"}).exit_code, 0);
  CommandResult r = server_->Cli({"nodes", "get", "n1", "-o", "yaml"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\nname: n1\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  model: H200-SXM-141GB\n"), std::string::npos) << r.out;
  r = server_->Cli({"nodes", "list", "-o", "yaml"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("---\n", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("\n---\n"), std::string::npos) << r.out;
  r = server_->Cli({"nodes", "list", "-o", "csv"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> lines = absl::StrSplit(r.out, "\r\n", absl::SkipEmpty());
  ASSERT_EQ(lines.size(), 3u) << r.out;
  EXPECT_NE(lines[0].find("gpu.model"), std::string::npos) << lines[0];
  EXPECT_NE(lines[1].find("H200-SXM-141GB"), std::string::npos) << lines[1];
  r = server_->Cli({"nodes", "list", "-o", "json"});
  lines = absl::StrSplit(r.out, '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), 2u) << r.out;
  for (const std::string& line : lines) EXPECT_TRUE(nlohmann::json::accept(line)) << line;
  r = server_->Cli({"nodes", "remove", "n2", "-o", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["removed"], "n2");
  r = server_->Cli({"gpus", "list", "-o", "xml"});
  EXPECT_EQ(r.exit_code, 2);
}

// Typos get the nearest name, and all of them are usage errors (exit 2)
// found before any call; the exit codes are in every --help.
TEST_F(CliConventionsTest, MistypedNamesSuggestTheNearestOne) {
  CommandResult r = server_->Cli({"nodes", "lsit"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("did you mean 'list'?"), std::string::npos) << r.err;
  const std::vector<std::string> job = {"predict", "--batch", "8", "--iterations", "10"};
  auto predict = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = job;
    args.insert(args.end(), extra.begin(), extra.end());
    return server_->Cli(args);
  };
  r = predict({"--family", "lstm", "--gpuu", "H200"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("unknown flag '--gpuu'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("did you mean '--gpu'?"), std::string::npos) << r.err;
  r = predict({"--family", "lstm", "--gpu", "H2000"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("did you mean 'H200-SXM-141GB'?"), std::string::npos) << r.err;
  r = predict({"--family", "lsmt", "--gpu", "H200"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("did you mean 'lstm'?"), std::string::npos) << r.err;
  r = RunCommand({PERFCAST_CLI_PATH, "recommend", "--help"});
  EXPECT_NE(r.out.find("Exit codes: 0 done; 1 refused"), std::string::npos) << r.out;
}

TEST_F(CliConventionsTest, GpuCatalogIsListedWithoutAServer) {
  CommandResult r = RunCommand({PERFCAST_CLI_PATH, "--server", "127.0.0.1:1", "gpus", "list"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("H200-SXM-141GB"), std::string::npos);
  EXPECT_NE(r.out.find("L40S-48GB"), std::string::npos);
  r = RunCommand({PERFCAST_CLI_PATH, "gpus", "list", "-o", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> lines = absl::StrSplit(r.out, '\n', absl::SkipEmpty());
  EXPECT_GE(lines.size(), 10u);
  EXPECT_TRUE(nlohmann::json::parse(lines[0]).contains("memory_bandwidth_gbs"));
}

TEST_F(CliConventionsTest, GpusShowGivesEveryValueItsSourceAndUnknownNamesTheNearest) {
  CommandResult r = RunCommand({PERFCAST_CLI_PATH, "gpus", "show", "B200"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("B200-SXM-180GB"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("NVIDIA HGX B200 datasheet (2024-03)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("fp8_tflops"), std::string::npos) << r.out;
  r = RunCommand({PERFCAST_CLI_PATH, "gpus", "show", "B300"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("NOT_FOUND"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("nearest: B200-SXM-180GB"), std::string::npos) << r.err;
}

// A spec file is checked before anything is stored; once registered, its GPU
// model is a --gpu like a catalog name.
TEST_F(CliConventionsTest, SpecFilesAreStrictAndTheirGpuIsAGpuName) {
  CommandResult help = RunCommand({PERFCAST_CLI_PATH, "nodes", "register", "--help"});
  EXPECT_NE(help.out.find("memory_bandwidth_gbs"), std::string::npos) << help.out;
  const std::string gpu =
      R"("model": "ACME-X1", "memory_gib": 96, "memory_bandwidth_gbs": 4000, "fp32_tflops": 60)";
  const std::string bad = WriteFile(
      "bad.json", absl::StrCat(R"({"name": "x1", "gpu": {)", gpu, R"(, "bf16_tflop": 900}})"));
  CommandResult r = server_->Cli({"nodes", "register", "--spec", bad});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("did you mean 'bf16_tflops'"), std::string::npos) << r.err;
  r = server_->Cli({"nodes", "list"});
  EXPECT_EQ(r.out.find("x1"), std::string::npos) << "a refused spec registered a node: " << r.out;
  const std::string good = WriteFile(
      "good.json", absl::StrCat(R"({"name": "x1", "gpu": {)", gpu, R"(, "bf16_tflops": 900}})"));
  r = server_->Cli({"nodes", "register", "--spec", good});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = server_->Cli({"predict", "--family", "lstm", "--param", "layers=2", "--param", "hidden=256",
                    "--batch", "64", "--gpu", "ACME-X1", "--iterations", "10"});
  EXPECT_EQ(r.err.find("unknown GPU"), std::string::npos) << r.err;
}

TEST_F(CliConventionsTest, NodeNamesWithTerminalEscapesAreRefused) {
  CommandResult r = server_->Cli({"nodes", "register", "--name", "evil\x1b[2J", "--gpu", "L4"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("INVALID_ARGUMENT"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find('\x1b'), std::string::npos) << "the error echoed the escape";
}

TEST_F(CliConventionsTest, EndlessInputEndsWithABoundedError) {
  CommandResult r = server_->Cli({"import", "--format", "csv", "/dev/zero"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("longer than"), std::string::npos) << r.err.substr(0, 300);
  EXPECT_LT(r.err.size(), 500u);
  EXPECT_NE(r.err.find("nothing imported"), std::string::npos) << r.err;
}

TEST_F(CliConventionsTest, ServerRefusesABusyPort) {
  CommandResult r = RunCommand({PERFCASTD_PATH, "--listen", server_->address(), "--db",
                                dir_.File("second.db"), "--log-level", "error"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("in use"), std::string::npos) << r.err;
  // The refused server leaves no new database file behind.
  EXPECT_FALSE(std::filesystem::exists(dir_.File("second.db")));
  EXPECT_FALSE(std::filesystem::exists(dir_.File("second.db-wal")));
}

TEST_F(CliConventionsTest, ServerRefusesAnAgentFileAndLeavesItUntouched) {
  const std::string copy = dir_.File("h100.sqlite");
  std::filesystem::copy_file(std::string(PERFCAST_DATA_DIR) + "/h100.sqlite", copy);
  const std::string before = Slurp(copy);
  const auto mtime = std::filesystem::last_write_time(copy);
  // Both the new spelling and the old underscore alias are flags.
  CommandResult r = RunCommand({PERFCASTD_PATH, "--listen=127.0.0.1:0", "--db=" + copy,
                                "--log_level=error"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("not a server database"), std::string::npos) << r.err;
  EXPECT_EQ(Slurp(copy), before);
  EXPECT_EQ(std::filesystem::last_write_time(copy), mtime);
  EXPECT_FALSE(std::filesystem::exists(copy + "-wal"));
  // The same flags in the old spelling reach the same checks.
  r = RunCommand({PERFCASTD_PATH, "--tls_cert=" + dir_.File("missing.pem"), "--tls-key=x"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("--tls-cert"), std::string::npos) << r.err;
}

TEST_F(CliConventionsTest, NodeListAndExportTakeShortGpuNames) {
  ASSERT_EQ(server_->Cli({"nodes", "register", "--name", "n1", "--gpu", "H200"}).exit_code, 0);
  CommandResult r = server_->Cli({"nodes", "list", "--gpu", "H200", "-o", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\"n1\""), std::string::npos) << r.out;
  const std::string csv = WriteFile("l4.csv",
                                    "gpu,family,params,batch_size,precision,phase,mean_ms\n"
                                    "L4,lstm,layers=2,64,fp32,train,3.5\n");
  ASSERT_EQ(server_->Cli({"import", csv}).exit_code, 0);
  r = server_->Cli({"export", "--gpu", "L4", "--format", "jsonl"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\"mean_ms\":3.5"), std::string::npos) << r.out;
  for (const std::vector<std::string>& command :
       {std::vector<std::string>{"nodes", "list", "--gpu", "H100"},
        std::vector<std::string>{"export", "--gpu", "H100"},
        std::vector<std::string>{"evaluate", "--held-out-gpu", "H100"}}) {
    r = server_->Cli(command);
    EXPECT_EQ(r.exit_code, 2) << command[0] << r.err;
    EXPECT_NE(r.err.find("ambiguous"), std::string::npos) << command[0] << r.err;
  }
}

TEST_F(CliConventionsTest, EchoedNamesCannotDriveTheTerminal) {
  const std::string csv = WriteFile("evil.csv",
                                    "node,family,params,batch_size,precision,phase,mean_ms\n"
                                    "\x1b[2Jevil\x01,lstm,layers=2,64,fp32,train,3.5\n");
  CommandResult r = server_->Cli({"import", csv});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("rejected: unknown node"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("\\x1b[2Jevil\\x01"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find('\x1b'), std::string::npos) << "a rejection echoed the escape";
  r = server_->Cli({"\x1b[2J"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err.find('\x1b'), std::string::npos) << "a usage error echoed the escape";
}

}  // namespace
}  // namespace perfcast::testing
