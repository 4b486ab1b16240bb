// Fuzzes the CSV profile reader (perfcast import file.csv): any bytes as a
// CSV file. Invariants: every accepted row is a storable profile, and the
// accepted rows exported as CSV read back identical; a JSON Lines export of
// them does not fail whatever bytes their text fields hold.
#include <cstddef>
#include <cstdint>
#include <string>

#include "tests/fuzz/profile_file_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using perfcast::client::ProfileFormat;
  const std::string text(reinterpret_cast<const char*>(data), size);
  perfcast::fuzz::ReadResult result = perfcast::fuzz::ReadText(text, ProfileFormat::kCsv);
  perfcast::fuzz::CheckAccepted(result.profiles);
  perfcast::fuzz::CheckRoundTrip(result.profiles, ProfileFormat::kCsv);
  perfcast::fuzz::Write(result.profiles, ProfileFormat::kJsonLines);
  return 0;
}
