#include "db/store.h"

#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "db/sqlite_store.h"
#ifdef PERFCAST_HAVE_POSTGRES
#include "db/postgres_store.h"
#endif

namespace perfcast::db {
namespace {

bool IsPostgresUri(absl::string_view uri) {
  return absl::StartsWith(uri, "postgresql://") || absl::StartsWith(uri, "postgres://");
}

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
        "' (expected sqlite:///path, postgresql://... or a file path)"));
  }
  return std::string(uri);
}

#ifndef PERFCAST_HAVE_POSTGRES
absl::Status BuiltWithoutPostgres() {
  return absl::UnimplementedError(
      "this perfcast was built without PostgreSQL support (PERFCAST_WITH_POSTGRES=OFF or no "
      "libpqxx); use a sqlite:// database or rebuild with libpqxx-dev installed");
}
#endif

}  // namespace

absl::StatusOr<std::unique_ptr<Store>> OpenStore(absl::string_view uri) {
  if (IsPostgresUri(uri)) {
#ifdef PERFCAST_HAVE_POSTGRES
    return OpenPostgresStore(std::string(uri));
#else
    return BuiltWithoutPostgres();
#endif
  }
  ASSIGN_OR_RETURN(std::string path, SqlitePath(uri));
  return OpenSqliteStore(path);
}

absl::StatusOr<std::optional<std::string>> SqliteFilePath(absl::string_view uri) {
  if (IsPostgresUri(uri)) return std::nullopt;
  ASSIGN_OR_RETURN(std::string path, SqlitePath(uri));
  return std::optional<std::string>(std::move(path));
}

absl::StatusOr<std::unique_ptr<Store>> OpenStoreReadOnly(absl::string_view uri) {
  if (IsPostgresUri(uri)) {
#ifdef PERFCAST_HAVE_POSTGRES
    return OpenPostgresStoreReadOnly(std::string(uri));
#else
    return BuiltWithoutPostgres();
#endif
  }
  ASSIGN_OR_RETURN(std::string path, SqlitePath(uri));
  return OpenSqliteStoreReadOnly(path);
}

std::string RedactDatabaseUri(absl::string_view uri) {
  std::string out(uri);
  // scheme://user:password@host...: the password ends at the last '@' of the
  // authority (passwords may contain '@' only percent-encoded, but be safe).
  if (size_t scheme = out.find("://"); scheme != std::string::npos) {
    const size_t authority = scheme + 3;
    size_t end = out.find_first_of("/?", authority);
    if (end == std::string::npos) end = out.size();
    const size_t at = out.rfind('@', end);
    if (at != std::string::npos && at >= authority) {
      const size_t colon = out.find(':', authority);
      if (colon != std::string::npos && colon < at) out.replace(colon + 1, at - colon - 1, "****");
    }
  }
  // password=... among the query parameters.
  for (size_t pos = out.find("password="); pos != std::string::npos;
       pos = out.find("password=", pos + 1)) {
    const size_t value = pos + 9;
    size_t end = out.find('&', value);
    if (end == std::string::npos) end = out.size();
    out.replace(value, end - value, "****");
  }
  return out;
}

absl::Status ForEachNode(Store& store, NodeFilter filter,
                         const std::function<void(models::Node&)>& visit) {
  if (filter.page_size == 0) filter.page_size = 1000;
  do {
    ASSIGN_OR_RETURN(NodePage page, store.ListNodes(filter));
    for (models::Node& node : page.nodes) visit(node);
    filter.page_token = page.next_page_token;
  } while (!filter.page_token.empty());
  return absl::OkStatus();
}

}  // namespace perfcast::db
