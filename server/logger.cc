#include "server/logger.h"

#include <chrono>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "nlohmann/json.hpp"

namespace perfcast::server {

absl::StatusOr<LogLevel> ParseLogLevel(absl::string_view name) {
  const std::string lower = absl::AsciiStrToLower(name);
  if (lower == "debug") return LogLevel::kDebug;
  if (lower == "info") return LogLevel::kInfo;
  if (lower == "warning" || lower == "warn") return LogLevel::kWarning;
  if (lower == "error") return LogLevel::kError;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown log level '", name, "' (expected debug, info, warning or error)"));
}

void Logger::Log(LogLevel level, absl::string_view message, Fields fields) {
  if (!Enabled(level)) return;
  static constexpr const char* kNames[] = {"debug", "info", "warning", "error"};
  nlohmann::json line;
  line["ts"] = absl::FormatTime("%Y-%m-%dT%H:%M:%E6SZ", absl::Now(), absl::UTCTimeZone());
  line["level"] = kNames[static_cast<int>(level)];
  line["msg"] = std::string(message);
  for (const auto& [key, value] : fields) line[std::string(key)] = value;
  const std::string text = line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::lock_guard<std::mutex> lock(mutex_);
  std::fprintf(sink_, "%s\n", text.c_str());
  std::fflush(sink_);
}

}  // namespace perfcast::server
