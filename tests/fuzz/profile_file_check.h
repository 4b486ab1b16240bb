// Shared by the CSV and JSON Lines fuzz targets: reads text through the
// real profile file reader, checks what every accepted record must satisfy,
// and checks that an export of the accepted records reads back unchanged.
#ifndef PERFCAST_TESTS_FUZZ_PROFILE_FILE_CHECK_H_
#define PERFCAST_TESTS_FUZZ_PROFILE_FILE_CHECK_H_

#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "client/profile_files.h"
#include "models/profile.h"
#include "tests/fuzz/fuzz_check.h"

namespace perfcast::fuzz {

struct ReadResult {
  bool ok = false;
  std::vector<models::Profile> profiles;
  int64_t bad_records = 0;
};

inline ReadResult ReadText(const std::string& text, client::ProfileFormat format) {
  ReadResult result;
  client::ProfileSink sink;
  sink.node = [](const models::Node& node) {
    PERFCAST_FUZZ_CHECK(!node.name.empty() && node.gpu.fp32_tflops > 0, node.name);
  };
  sink.profile = [&](int64_t line, const models::Profile& p) { result.profiles.push_back(p); };
  sink.bad_record = [&](int64_t line, const std::string& reason) {
    PERFCAST_FUZZ_CHECK(!reason.empty(), "a rejection says why");
    ++result.bad_records;
  };
  std::istringstream in(text);
  result.ok = client::ReadProfiles(in, "fuzz", format, sink).ok();
  return result;
}

inline std::string Write(const std::vector<models::Profile>& profiles,
                         client::ProfileFormat format) {
  std::ostringstream out;
  auto writer = client::ProfileWriter::Create(format, out);
  PERFCAST_FUZZ_CHECK(writer.ok(), writer.status().ToString());
  for (const models::Profile& p : profiles) (*writer)->Write(p);
  return out.str();
}

// Every accepted profile is storable: valid, with finite positive times.
inline void CheckAccepted(const std::vector<models::Profile>& profiles) {
  for (const models::Profile& p : profiles) {
    absl::Status valid = models::ValidateProfile(p);
    PERFCAST_FUZZ_CHECK(valid.ok(), valid.ToString());
    PERFCAST_FUZZ_CHECK(std::isfinite(p.iteration.mean_ms) && p.iteration.mean_ms > 0,
                        p.workload.Key());
    PERFCAST_FUZZ_CHECK(p.iteration.min_ms <= p.iteration.max_ms, p.workload.Key());
  }
}

// Writing the accepted profiles in `format` and reading them back gives the
// same profiles, none rejected.
inline void CheckRoundTrip(const std::vector<models::Profile>& profiles,
                           client::ProfileFormat format) {
  const std::string text = Write(profiles, format);
  ReadResult again = ReadText(text, format);
  PERFCAST_FUZZ_CHECK(again.ok || profiles.empty(), text);
  PERFCAST_FUZZ_CHECK(again.bad_records == 0, text);
  PERFCAST_FUZZ_CHECK(again.profiles.size() == profiles.size(), text);
  for (size_t i = 0; i < profiles.size(); ++i) {
    PERFCAST_FUZZ_CHECK(again.profiles[i] == profiles[i], text);
  }
}

}  // namespace perfcast::fuzz

#endif  // PERFCAST_TESTS_FUZZ_PROFILE_FILE_CHECK_H_
