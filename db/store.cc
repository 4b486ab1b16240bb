#include "db/store.h"

#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "db/sqlite_store.h"

namespace perfcast::db {
namespace {

// Splits a store URI into its SQLite file path. "sqlite:///abs" and
// "sqlite://rel" name files; a string without a scheme is a path.
absl::StatusOr<std::string> SqlitePath(absl::string_view uri) {
  if (uri.empty()) return absl::InvalidArgumentError("empty database URI");
  constexpr absl::string_view kScheme = "sqlite://";
  if (absl::StartsWith(uri, kScheme)) {
    absl::string_view path = uri.substr(kScheme.size());
    if (path.empty()) return absl::InvalidArgumentError("sqlite:// URI without a path");
    return std::string(path);
  }
  if (size_t colon = uri.find("://"); colon != absl::string_view::npos) {
    return absl::InvalidArgumentError(absl::StrCat(
        "unsupported database URI scheme '", uri.substr(0, colon),
        "' (expected sqlite:///path or a file path)"));
  }
  return std::string(uri);
}

}  // namespace

absl::StatusOr<std::unique_ptr<Store>> OpenStore(absl::string_view uri) {
  absl::StatusOr<std::string> path = SqlitePath(uri);
  if (!path.ok()) return path.status();
  return OpenSqliteStore(*path);
}

absl::StatusOr<std::unique_ptr<Store>> OpenStoreReadOnly(absl::string_view uri) {
  absl::StatusOr<std::string> path = SqlitePath(uri);
  if (!path.ok()) return path.status();
  return OpenSqliteStoreReadOnly(*path);
}

}  // namespace perfcast::db
