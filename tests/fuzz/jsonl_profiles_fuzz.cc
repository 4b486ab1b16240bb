// Fuzzes the JSON Lines profile reader (perfcast import file.jsonl): any
// bytes as a JSON Lines file. Invariants: every accepted record is a
// storable profile, and the accepted records exported as JSON Lines read
// back identical.
#include <cstddef>
#include <cstdint>
#include <string>

#include "tests/fuzz/profile_file_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using perfcast::client::ProfileFormat;
  const std::string text(reinterpret_cast<const char*>(data), size);
  perfcast::fuzz::ReadResult result = perfcast::fuzz::ReadText(text, ProfileFormat::kJsonLines);
  perfcast::fuzz::CheckAccepted(result.profiles);
  perfcast::fuzz::CheckRoundTrip(result.profiles, ProfileFormat::kJsonLines);
  return 0;
}
