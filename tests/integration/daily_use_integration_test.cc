// What an independent probe of everyday use found wrong (issue 31), each
// through the real perfcastd and the real CLI: imports that fail store
// nothing and say so, nonsense input is refused with one line, exports are
// whole or absent, name their GPUs and import back, terminals are safe from
// stored bytes, and the database is private to its user.
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "tests/db/test_util.h"
#include "tests/integration/process_harness.h"

namespace perfcast::testing {
namespace {

class DailyUseTest : public ::testing::Test {
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

  // Data lines of a CSV export of `server` (header excluded).
  static int ExportedRows(const ServerProcess& server) {
    CommandResult r = server.Cli({"export"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    std::vector<std::string> lines = absl::StrSplit(r.out, '\n', absl::SkipEmpty());
    return lines.empty() ? 0 : static_cast<int>(lines.size()) - 1;
  }

  TempDir dir_;
  std::unique_ptr<ServerProcess> server_;
};

constexpr char kCsv[] =
    "node,family,params,batch_size,precision,phase,mean_ms,median_ms,count\n"
    "n1,lstm,layers=2;hidden=128,64,bf16-amp,train,3.5,3.4,20\n"
    "n1,lstm,layers=4;hidden=128,64,bf16-amp,train,6.5,6.4,20\n";
// The same runs on a catalog GPU's node (registered by the import).
constexpr char kGpuCsv[] =
    "gpu,family,params,batch_size,precision,phase,mean_ms,median_ms,count\n"
    "H100-SXM5-80GB,lstm,layers=2;hidden=128,64,bf16-amp,train,3.5,3.4,20\n"
    "H100-SXM5-80GB,lstm,layers=4;hidden=128,64,bf16-amp,train,6.5,6.4,20\n";

// D1: with a message limit the second file's message exceeds, the CLI said
// "nothing imported" while the first file's 28 profiles and its node were
// committed.
TEST_F(DailyUseTest, AnImportRefusedPartwayStoresNothingAndSaysSo) {
  ServerProcess small(dir_.File("small.db"), {"--max-message-bytes=300000"});
  ASSERT_TRUE(small.started());
  const std::string data = PERFCAST_DATA_DIR;
  CommandResult r =
      small.Cli({"import", data + "/h200-m7-sizes.sqlite", data + "/h200.sqlite"});
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.err.find("RESOURCE_EXHAUSTED"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("nothing imported"), std::string::npos) << r.err;
  EXPECT_EQ(ExportedRows(small), 0);
  CommandResult nodes = small.Cli({"nodes", "list", "-o", "json"});
  ASSERT_EQ(nodes.exit_code, 0) << nodes.err;
  EXPECT_EQ(nodes.out.find("\"name\""), std::string::npos) << nodes.out;
}

// D5: strtod's hexadecimal, a time from the year 294247, sizes of 0 that
// became defaults, and a 100,000-character model name.
TEST_F(DailyUseTest, NonsenseInputIsRefusedWithOneLine) {
  CommandResult r = server_->Cli(
      {"import", WriteFile("hex.csv",
                           "node,gpu,family,batch_size,mean_ms,measured_at_us\n"
                           ",H100-SXM5-80GB,lstm,64,0x10,1760000000000000\n"
                           ",H100-SXM5-80GB,lstm,64,16,9223372036854775807\n"
                           ",H100-SXM5-80GB,lstm,32,16,1760000000000000\n")});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("hex.csv:2: rejected: mean_ms must be a decimal number, got '0x10'"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("hex.csv:3: rejected: measured_at_us"), std::string::npos) << r.err;
  EXPECT_EQ(ExportedRows(*server_), 1);

  for (const std::vector<std::string>& size :
       {std::vector<std::string>{"--torchvision", "resnet50", "--image", "0"},
        std::vector<std::string>{"--hf-config", WriteFile("gpt2.json", R"({"model_type": "gpt2",
            "n_layer": 2, "n_embd": 64, "n_head": 2, "n_positions": 128, "vocab_size": 100})"),
                                 "--seq-len", "0"}}) {
    std::vector<std::string> args = {"predict", "--gpu", "H100-SXM5-80GB", "--batch", "8"};
    args.insert(args.end(), size.begin(), size.end());
    CommandResult p = server_->Cli(args);
    EXPECT_EQ(p.exit_code, 2) << p.err;
    EXPECT_NE(p.err.find(size[2]), std::string::npos) << p.err;
  }

  CommandResult fit = server_->Cli({"fit", "--name", std::string(100'000, 'm')});
  EXPECT_EQ(fit.exit_code, 1);
  EXPECT_NE(fit.err.find("INVALID_ARGUMENT: fit: model name is too long (100000 bytes"),
            std::string::npos)
      << fit.err.substr(0, 300);
  EXPECT_LT(fit.err.size(), 400u);
}

// D7: an empty .csv exited 1, an empty .jsonl or a header alone 0.
TEST_F(DailyUseTest, FilesWithoutRecordsFailAlikeInEveryFormat) {
  for (const auto& [name, text] : std::vector<std::pair<std::string, std::string>>{
           {"empty.csv", ""},
           {"header.csv", "node,family,batch_size,mean_ms\n"},
           {"empty.jsonl", ""},
           {"blank.jsonl", "\n\n"}}) {
    CommandResult r = server_->Cli({"import", WriteFile(name, text)});
    EXPECT_EQ(r.exit_code, 1) << name << ": " << r.out << r.err;
    EXPECT_NE(r.err.find("no records"), std::string::npos) << name << ": " << r.err;
  }
}

// D7: the README says an export imports back, but its gpu column was blank
// and a fresh server knew none of its nodes.
TEST_F(DailyUseTest, AnExportImportsIntoAFreshServer) {
  ASSERT_EQ(server_->Cli({"nodes", "register", "--name", "n1", "--gpu", "H100-SXM5-80GB"}).exit_code,
            0);
  ASSERT_EQ(server_->Cli({"import", WriteFile("runs.csv", kCsv)}).exit_code, 0);
  for (const char* format : {"csv", "jsonl"}) {
    const std::string out = dir_.File(absl::StrCat("export.", format));
    CommandResult r = server_->Cli({"export", "--format", format, "--out", out});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(Slurp(out).find("H100-SXM5-80GB"), std::string::npos) << Slurp(out);
    ServerProcess fresh(dir_.File(absl::StrCat("fresh-", format, ".db")));
    ASSERT_TRUE(fresh.started());
    r = fresh.Cli({"import", out});
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_EQ(ExportedRows(fresh), 2);
    CommandResult node = fresh.Cli({"nodes", "get", "n1", "-o", "json"});
    EXPECT_EQ(node.exit_code, 0) << node.err;
    EXPECT_NE(node.out.find("H100-SXM5-80GB"), std::string::npos) << node.out;
    // Into the server it came from: every profile a duplicate, the node kept.
    r = server_->Cli({"import", out, "-o", "json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("\"duplicates\":2"), std::string::npos) << r.out;
  }
}

// D4: a failed export replaced an existing file with a header; now the file
// is replaced only by a whole export, and no partial file is left.
TEST_F(DailyUseTest, AFailedExportLeavesTheFileAsItWas) {
  ASSERT_EQ(server_->Cli({"import", WriteFile("runs.csv", kGpuCsv)})
                .exit_code,
            0);
  const std::string out = WriteFile("kept.csv", "what was here before\n");
  const std::string address = server_->address();
  server_.reset();  // nothing listens there any more
  CommandResult r = RunCommand({PERFCAST_CLI_PATH, "--server", address, "export", "--out", out});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("was not written"), std::string::npos) << r.err;
  EXPECT_EQ(Slurp(out), "what was here before\n");
  for (const auto& entry : std::filesystem::directory_iterator(dir_.path())) {
    EXPECT_EQ(entry.path().filename().string().find(".partial"), std::string::npos)
        << entry.path();
  }
}

// D6: tables and JSON escaped stored control characters, export --format csv
// to a terminal printed them raw. `script` gives the CLI a terminal.
TEST_F(DailyUseTest, ExportToATerminalEscapesControlCharacters) {
  ASSERT_EQ(server_->Cli({"import",
                          WriteFile("evil.csv",
                                    "gpu,family,batch_size,mean_ms,agent_version\n"
                                    "H100-SXM5-80GB,lstm,64,2.5,\"a\x1b]0;owned\x07\x1b[2J\"\n")})
                .exit_code,
            0);
  const std::string command = absl::StrCat(PERFCAST_CLI_PATH, " --server ", server_->address(),
                                           " export --format csv");
  CommandResult r = RunCommand({"/usr/bin/script", "-qec", command, "/dev/null"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("lstm"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find('\x1b'), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find('\x07'), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\\x1b[2J"), std::string::npos) << r.out;
  // A pipe is no terminal: the bytes are exported as stored.
  EXPECT_NE(server_->Cli({"export", "--format", "csv"}).out.find("\x1b[2J"), std::string::npos);
}

// D7: a new database and the folder made for it were readable by everyone.
TEST_F(DailyUseTest, TheDatabaseAndItsFolderArePrivate) {
  const std::string folder = dir_.File("state/perfcast");
  ServerProcess server(folder + "/perfcast.db");
  ASSERT_TRUE(server.started());
  ASSERT_EQ(server.Cli({"import", WriteFile("runs.csv", kCsv)}).exit_code, 3);  // n1 unknown
  auto mode = [](const std::string& path) {
    struct stat st {};
    EXPECT_EQ(stat(path.c_str(), &st), 0) << path;
    return st.st_mode & 0777;
  };
  EXPECT_EQ(mode(folder), 0700u);
  for (const char* suffix : {"", "-wal", "-shm"}) {
    const std::string file = folder + "/perfcast.db" + suffix;
    if (std::string(suffix).empty() || std::filesystem::exists(file)) {
      EXPECT_EQ(mode(file), 0600u) << file;
    }
  }
}

// D3: /dev/urandom read as JSON Lines ran until the CLI held 2.1 GB; it now
// stops once its unreadable records pass a bound, storing nothing.
TEST_F(DailyUseTest, RandomBytesEndTheImport) {
  CommandResult r = server_->Cli({"import", "--format", "jsonl", "/dev/urandom"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("not a profile file"), std::string::npos) << r.err.substr(0, 300);
  EXPECT_NE(r.err.find("nothing imported"), std::string::npos) << r.err.substr(0, 300);
  EXPECT_LT(r.err.size(), 600u);
}

}  // namespace
}  // namespace perfcast::testing
