#include "db/profile_column_binder.h"

#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <variant>

#include "absl/strings/string_view.h"
#include "models/profile_columns.h"

namespace perfcast::db {

ProfileColumnBinder::ProfileColumnBinder() {
  const models::Profile probe;
  const char* base = reinterpret_cast<const char*>(&probe);
  for (const models::ProfileColumn& column : models::ProfileColumns()) {
    std::visit(
        [&](const auto* field) {
          using T = std::remove_cv_t<std::remove_pointer_t<decltype(field)>>;
          Slot slot;
          slot.offset = reinterpret_cast<const char*>(field) - base;
          if constexpr (std::is_same_v<T, int64_t>) {
            slot.kind = Kind::kInt64;
          } else if constexpr (std::is_same_v<T, int>) {
            slot.kind = Kind::kInt;
          } else if constexpr (std::is_same_v<T, double>) {
            slot.kind = Kind::kDouble;
          } else if constexpr (std::is_same_v<T, std::optional<double>>) {
            slot.kind = Kind::kOptionalDouble;
          } else {
            static_assert(std::is_same_v<T, std::string>);
            slot.kind = Kind::kText;
          }
          slots_.push_back(slot);
        },
        models::FieldOf(column, probe));
  }
}

void ProfileColumnBinder::Bind(Statement& s, int first, const models::Profile& p) const {
  const char* base = reinterpret_cast<const char*>(&p);
  int index = first;
  for (const Slot& slot : slots_) {
    const char* at = base + slot.offset;
    switch (slot.kind) {
      case Kind::kInt64:
        s.Bind(index, *reinterpret_cast<const int64_t*>(at));
        break;
      case Kind::kInt:
        s.Bind(index, int64_t{*reinterpret_cast<const int*>(at)});
        break;
      case Kind::kDouble:
        s.Bind(index, *reinterpret_cast<const double*>(at));
        break;
      case Kind::kOptionalDouble:
        s.Bind(index, *reinterpret_cast<const std::optional<double>*>(at));
        break;
      case Kind::kText:
        s.Bind(index, absl::string_view(*reinterpret_cast<const std::string*>(at)));
        break;
    }
    ++index;
  }
}

}  // namespace perfcast::db
