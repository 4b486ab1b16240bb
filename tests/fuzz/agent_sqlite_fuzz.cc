// Fuzzes the agent store reader (perfcast import agent.sqlite): any bytes
// as an agent's SQLite file, read through the real reader
// (client::ReadProfiles -> db::OpenStoreReadOnly, schema checks, row
// decoding). The bytes go to a file in a private temporary directory:
// SQLite opens files, and a read-only open must see exactly these bytes.
// Invariants: a failure says why; what the file yields goes through the
// server's import checks without crashing, and a profile those checks accept
// survives the wire encoding unchanged.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "client/profile_files.h"
#include "models/descriptor.h"
#include "models/profile.h"
#include "proto/convert.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

// A directory of this process's own; SQLite may put -wal/-shm files there.
const std::string& ScratchDir() {
  static const std::string* const kDir = [] {
    std::string pattern = (std::filesystem::temp_directory_path() / "agent_sqlite_fuzz.XXXXXX");
    if (mkdtemp(pattern.data()) == nullptr) std::abort();
    return new std::string(pattern);
  }();
  return *kDir;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace models = perfcast::models;
  const std::string path = ScratchDir() + "/agent.sqlite";
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) {
    std::filesystem::remove(path + suffix);
  }
  {
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  int64_t nodes = 0;
  perfcast::client::ProfileSink sink;
  sink.node = [&](const models::Node& node) { ++nodes; };
  sink.bad_record = [](int64_t, const std::string&) {};
  sink.profile = [](int64_t line, const models::Profile& stored) {
    // What ImportTransaction::Add checks before it stores a profile.
    absl::StatusOr<models::WorkloadSpec> spec = models::NormalizeSpec(stored.workload);
    if (!spec.ok()) return;
    if (!models::ValidateProfile(stored).ok()) return;
    perfcast::v1::Profile wire;
    perfcast::proto::ToProto(stored, &wire);
    absl::StatusOr<models::Profile> back = perfcast::proto::FromProto(wire);
    PERFCAST_FUZZ_CHECK(back.ok() && *back == stored, stored.workload.Key());
  };
  absl::Status status =
      perfcast::client::ReadProfiles(path, perfcast::client::ProfileFormat::kAgentSqlite, sink);
  if (!status.ok()) PERFCAST_FUZZ_CHECK(!status.message().empty(), "an error says why");
  return 0;
}
