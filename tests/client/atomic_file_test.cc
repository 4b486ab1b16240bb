// Issue 31, D4: `export --out` replaced an existing file with a header when
// the call failed, and a server killed mid-stream left a well-formed partial
// CSV. The file is written beside its path and renamed only on Commit().
#include "client/atomic_file.h"

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "gtest/gtest.h"
#include "tests/db/test_util.h"

namespace perfcast::client {
namespace {

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

int Entries(const std::filesystem::path& dir) {
  int n = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(dir)) ++n;
  return n;
}

TEST(AtomicFileTest, AnExportCutShortLeavesTheOldFileAndNoPartOfTheNew) {
  testing::TempDir dir;
  const std::string path = dir.File("h200.csv");
  std::ofstream(path) << "what was here before\n";
  {
    absl::StatusOr<std::unique_ptr<AtomicFile>> file = AtomicFile::Create(path);
    ASSERT_TRUE(file.ok()) << file.status();
    (*file)->stream() << "node,gpu,family\nn1,H200-SXM-141GB,lstm\n";
    // The stream broke: no Commit().
  }
  EXPECT_EQ(Slurp(path), "what was here before\n");
  EXPECT_EQ(Entries(dir.path()), 1);
}

TEST(AtomicFileTest, CommitReplacesTheFileWhole) {
  testing::TempDir dir;
  const std::string path = dir.File("h200.csv");
  std::ofstream(path) << "what was here before\n";
  absl::StatusOr<std::unique_ptr<AtomicFile>> file = AtomicFile::Create(path);
  ASSERT_TRUE(file.ok()) << file.status();
  (*file)->stream() << "node,gpu\n";
  EXPECT_EQ(Slurp(path), "what was here before\n");  // nothing shows before the rename
  ASSERT_TRUE((*file)->Commit().ok());
  file->reset();
  EXPECT_EQ(Slurp(path), "node,gpu\n");
  EXPECT_EQ(Entries(dir.path()), 1);
}

TEST(AtomicFileTest, AMissingDirectoryIsNotFound) {
  testing::TempDir dir;
  EXPECT_EQ(AtomicFile::Create(dir.File("no/such/dir.csv")).status().code(),
            absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace perfcast::client
