// Helpers shared by tests: temporary directories and valid sample records.
#ifndef PERFCAST_TESTS_DB_TEST_UTIL_H_
#define PERFCAST_TESTS_DB_TEST_UTIL_H_

#include <filesystem>
#include <string>

#include "models/hardware.h"
#include "models/profile.h"

namespace perfcast::testing {

// A fresh directory under the system temp dir, removed with the object.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::string File(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

// A node with plausible H100-like hardware features.
models::Node SampleNode(const std::string& name, const std::string& gpu_model = "H100-SXM5-80GB");

// A valid operation-level profile (a GEMM) on `node`, distinct per `seed`.
models::Profile SampleProfile(const std::string& node, int seed);

}  // namespace perfcast::testing

#endif  // PERFCAST_TESTS_DB_TEST_UTIL_H_
