// Reads a perfcast SQLite file directly, the way an operator would after a
// crash: is the file sound, and what does it hold. Used by the reliability
// tests beside the API, so that a check does not depend on the code it checks.
#ifndef PERFCAST_TESTS_RELIABILITY_STORE_CHECK_H_
#define PERFCAST_TESTS_RELIABILITY_STORE_CHECK_H_

#include <cstdint>
#include <map>
#include <set>
#include <string>

#include "absl/status/statusor.h"

namespace perfcast::testing {

// Runs PRAGMA integrity_check and PRAGMA foreign_key_check on `path`. The
// file is opened read-only: a WAL left behind by a killed writer is read but
// not checkpointed or removed, so the next perfcastd start still has to
// recover it. Returns "ok", or the problems found (or the open error).
std::string CheckIntegrity(const std::string& path);

// Stored profiles per node, for the nodes whose name starts with `prefix`
// (a node without profiles maps to 0).
absl::StatusOr<std::map<std::string, int64_t>> ProfilesPerNode(const std::string& path,
                                                               const std::string& prefix);

// The workload keys of the profiles stored for node `node`.
absl::StatusOr<std::set<std::string>> WorkloadKeysOf(const std::string& path,
                                                     const std::string& node);

// Resident memory of process `pid` in KiB (VmRSS of /proc/<pid>/status);
// -1 if it cannot be read.
int64_t ResidentKib(int pid);

}  // namespace perfcast::testing

#endif  // PERFCAST_TESTS_RELIABILITY_STORE_CHECK_H_
