// Validation and naming rules that every Store implementation applies the
// same way, so that SQLite and PostgreSQL accept and reject the same records
// with the same messages.
#ifndef PERFCAST_DB_STORE_RULES_H_
#define PERFCAST_DB_STORE_RULES_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "models/hardware.h"
#include "db/store.h"
#include "models/profile.h"

namespace perfcast::db {

// Wall-clock microseconds since the Unix epoch (registration and model times).
int64_t NowMicros();

// The stored name of a node's source ("catalog", "spec", "agent") and back;
// an unknown name reads as kCatalog.
absl::string_view NodeSourceName(models::NodeSource source);
models::NodeSource ParseNodeSource(absl::string_view name);

// Label keys end up inside queries (JSON paths in SQLite); keep them to a safe
// alphabet: 1..63 of [A-Za-z0-9._/-].
bool IsLabelKey(absl::string_view key);

// Whether `text` is valid UTF-8 without control characters (C0, DEL, C1):
// what names must be, since tables and logs print them to terminals, where
// an escape sequence in a name would take over the screen.
bool IsPrintableText(absl::string_view text);

// InvalidArgument for a node no store may hold: empty, overlong or
// unprintable name (see IsPrintableText), no or unprintable GPU model,
// negative counts or rates, non-finite rates, bad label keys, unprintable
// label values.
absl::Status ValidateNode(const models::Node& node);

// Checks a ListNodes filter the same way for every store and returns the
// node id its page starts after (0 for the first page). InvalidArgument for a
// page size outside 1..1000, a page token that is not a non-negative id, or a
// label key that IsLabelKey refuses.
absl::StatusOr<int64_t> NodePageStart(const NodeFilter& filter);

// The longest model name a store holds.
inline constexpr size_t kMaxModelNameLength = 128;

// InvalidArgument for a model name no store may hold: longer than
// kMaxModelNameLength or not printable (see IsPrintableText). Empty is the
// default model's name and valid.
absl::Status ValidateModelName(absl::string_view name);

// Whether `hash` is a content hash as stored: 32 hexadecimal digits.
bool IsHexHash(absl::string_view hash);

// The columns of models::ProfileColumns() as an SQL list, each name after
// `prefix` ("p." in scans): "p.iterations, p.mean_ms, ...". Every store's
// INSERT and SELECT of profiles names them in this order.
std::string ProfileColumnList(absl::string_view prefix = "");

// The profile row as every store's import inserts it: content hash, node id,
// workload id (kProfileKeyColumns), then ProfileColumnList().
inline constexpr int kProfileKeyColumns = 3;
int ProfileInsertColumnCount();

// Where one import stands, kept the same way by every backend's
// ImportTransaction so that a misused import gets the same codes everywhere.
struct ImportState {
  ImportSummary summary;
  bool finished = false;  // committed or rolled back
  bool failed = false;    // rolled back because a statement failed

  // OK while Add and Commit may still be called: Aborted after a failure,
  // FailedPrecondition once the import has ended.
  absl::Status Usable() const;
  // Records record `index` as rejected for `reason`; the import goes on (OK).
  absl::Status Reject(int64_t index, absl::string_view reason);
};

}  // namespace perfcast::db

#endif  // PERFCAST_DB_STORE_RULES_H_
