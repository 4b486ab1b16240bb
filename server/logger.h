// Structured logs: one JSON object per line on stderr, with a timestamp, a
// level, a message and key/value fields, so that operators can ship them to
// any log system without parsing free text.
//
// Thread-safe: lines from concurrent RPCs never interleave.
#ifndef PERFCAST_SERVER_LOGGER_H_
#define PERFCAST_SERVER_LOGGER_H_

#include <cstdio>
#include <initializer_list>
#include <mutex>
#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace perfcast::server {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3 };

// "debug", "info", "warning", "error". InvalidArgument otherwise.
absl::StatusOr<LogLevel> ParseLogLevel(absl::string_view name);

class Logger {
 public:
  using Fields = std::initializer_list<std::pair<absl::string_view, std::string>>;

  explicit Logger(LogLevel min_level, std::FILE* sink = stderr)
      : min_level_(min_level), sink_(sink) {}

  void Log(LogLevel level, absl::string_view message, Fields fields = {});
  void Debug(absl::string_view message, Fields fields = {}) { Log(LogLevel::kDebug, message, fields); }
  void Info(absl::string_view message, Fields fields = {}) { Log(LogLevel::kInfo, message, fields); }
  void Warning(absl::string_view message, Fields fields = {}) { Log(LogLevel::kWarning, message, fields); }
  void Error(absl::string_view message, Fields fields = {}) { Log(LogLevel::kError, message, fields); }
  bool Enabled(LogLevel level) const { return level >= min_level_; }

 private:
  LogLevel min_level_;
  std::FILE* sink_;
  std::mutex mutex_;
};

}  // namespace perfcast::server

#endif  // PERFCAST_SERVER_LOGGER_H_
