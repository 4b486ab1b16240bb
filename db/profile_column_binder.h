// ProfileColumnBinder: binds a profile's columns (models::ProfileColumns(),
// in order) as parameters of an SQLite statement, the import's hot loop.
// Internal to db/.
#ifndef PERFCAST_DB_PROFILE_COLUMN_BINDER_H_
#define PERFCAST_DB_PROFILE_COLUMN_BINDER_H_

#include <cstddef>
#include <vector>

#include "db/sqlite_handle.h"
#include "models/profile.h"

namespace perfcast::db {

// Where each profile column lives inside a Profile and how it binds, found
// once from the column table: binding a row then costs one switch per column
// instead of a call through the column's accessor and two variant
// dispatches, which showed in an import writer's profile
// (docs/sqlite-import.md). A member's offset is the same in every Profile, so
// the offsets found in one locate the columns of all.
//
// Immutable after construction: one binder may be shared between threads.
class ProfileColumnBinder {
 public:
  ProfileColumnBinder();

  // Binds the profile columns from parameter `first` on.
  void Bind(Statement& s, int first, const models::Profile& p) const;

 private:
  enum class Kind { kInt64, kInt, kDouble, kOptionalDouble, kText };
  struct Slot {
    Kind kind = Kind::kInt64;
    ptrdiff_t offset = 0;
  };
  std::vector<Slot> slots_;
};

}  // namespace perfcast::db

#endif  // PERFCAST_DB_PROFILE_COLUMN_BINDER_H_
