// RETURN_IF_ERROR and ASSIGN_OR_RETURN: early returns on a failed absl::Status
// or absl::StatusOr<T>, in one line. Debian 12's Abseil (20220623) predates
// absl/status/status_macros.h, so the project keeps its own two macros.
//
// Both work in any function that returns absl::Status or absl::StatusOr<U>
// (a failed status converts to either). Each evaluates its expression exactly
// once and returns the error unchanged (code, message and payloads).
//
//   absl::Status Save(Store& store, const Node& node) {
//     RETURN_IF_ERROR(Validate(node));               // absl::Status
//     ASSIGN_OR_RETURN(int64_t id, store.Put(node)); // absl::StatusOr<int64_t>
//     ASSIGN_OR_RETURN(auto rows, store.Rows(id));   // move-only T is fine
//     ...
//   }
//
// ASSIGN_OR_RETURN's left-hand side is a declaration (`auto x`, `const T& x`)
// or an existing lvalue (`x`, `out->field`); a type with a comma in it needs
// an alias or `auto`. It expands to several statements, so it cannot be the
// sole body of an unbraced if or loop.
#ifndef PERFCAST_BASE_STATUS_MACROS_H_
#define PERFCAST_BASE_STATUS_MACROS_H_

#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define RETURN_IF_ERROR(...)                                          \
  do {                                                                \
    if (::absl::Status perfcast_return_if_error_status = (__VA_ARGS__); \
        !perfcast_return_if_error_status.ok()) {                      \
      return perfcast_return_if_error_status;                         \
    }                                                                 \
  } while (false)

#define ASSIGN_OR_RETURN(lhs, ...)                                                    \
  PERFCAST_ASSIGN_OR_RETURN_IMPL_(                                                    \
      PERFCAST_STATUS_MACROS_CONCAT_(perfcast_assign_or_return_, __COUNTER__), lhs, \
      __VA_ARGS__)

// Implementation details; not part of the interface.
#define PERFCAST_STATUS_MACROS_CONCAT_INNER_(a, b) a##b
#define PERFCAST_STATUS_MACROS_CONCAT_(a, b) PERFCAST_STATUS_MACROS_CONCAT_INNER_(a, b)
#define PERFCAST_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, ...) \
  auto statusor = (__VA_ARGS__);                            \
  if (!statusor.ok()) {                                     \
    return std::move(statusor).status();                    \
  }                                                         \
  lhs = *std::move(statusor)

#endif  // PERFCAST_BASE_STATUS_MACROS_H_
