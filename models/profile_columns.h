// The measured values of a profile declared once, as data: each column's
// name (in both stores' `profiles` table, CSV headers and JSON Lines keys)
// and the Profile field it holds. The SQLite and PostgreSQL stores build their
// INSERT and SELECT lists and row mappings from this table, and the CLI's
// profile files their columns, so a new profile field is one entry here plus
// a schema migration in each store.
//
// Not in the table, because every consumer treats them specially: the store
// identity (id, content hash), the node (a foreign key in the stores, `node`
// or `gpu` in files) and the workload (a foreign key in the stores, its key
// parts in files).
#ifndef PERFCAST_MODELS_PROFILE_COLUMNS_H_
#define PERFCAST_MODELS_PROFILE_COLUMNS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <variant>

#include "absl/types/span.h"
#include "absl/strings/string_view.h"
#include "models/profile.h"

namespace perfcast::models {

// Where a column's value lives in a Profile. The pointee's type is the
// column's type: an integer (int64_t or int), a number (double), an optional
// number (NULL when absent), or text. Only these are NOT NULL in the stores:
// an optional number is the one nullable kind.
using ProfileField =
    std::variant<int64_t*, int*, double*, std::optional<double>*, std::string*>;

struct ProfileColumn {
  // The column in both stores' `profiles` table.
  absl::string_view name;
  // The CSV header and JSON Lines key ("count" for the iteration count the
  // stores call "iterations").
  absl::string_view file_name;
  // The field this column reads and writes.
  ProfileField (*field)(Profile&);
};

// All columns in their export order (the order of CSV files).
absl::Span<const ProfileColumn> ProfileColumns();

// A column's field in a profile that is only read.
using ConstProfileField = std::variant<const int64_t*, const int*, const double*,
                                       const std::optional<double>*, const std::string*>;
ConstProfileField FieldOf(const ProfileColumn& column, const Profile& profile);

}  // namespace perfcast::models

#endif  // PERFCAST_MODELS_PROFILE_COLUMNS_H_
