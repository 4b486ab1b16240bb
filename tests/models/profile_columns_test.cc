#include "models/profile_columns.h"

#include <set>
#include <string>
#include <type_traits>
#include <variant>

#include "gtest/gtest.h"

namespace perfcast::models {
namespace {

// Writes a value that no default holds into `column` of `p`.
void Mark(const ProfileColumn& column, Profile& p) {
  std::visit(
      [](auto* field) {
        using T = std::remove_pointer_t<decltype(field)>;
        if constexpr (std::is_same_v<T, std::string>) {
          *field = "marked";
        } else {
          *field = 7;
        }
      },
      column.field(p));
}

bool HoldsDefault(const ProfileColumn& column, const Profile& p) {
  const Profile defaults;
  return std::visit(
      [&](const auto* value) {
        using Pointer = std::remove_cvref_t<decltype(value)>;
        return *value == *std::get<Pointer>(FieldOf(column, defaults));
      },
      FieldOf(column, p));
}

TEST(ProfileColumnsTest, NamesAreUnique) {
  std::set<absl::string_view> names, file_names;
  for (const ProfileColumn& column : ProfileColumns()) {
    EXPECT_TRUE(names.insert(column.name).second) << column.name;
    EXPECT_TRUE(file_names.insert(column.file_name).second) << column.file_name;
  }
  EXPECT_TRUE(names.contains("method_version"));
  EXPECT_TRUE(file_names.contains("count"));
}

// Each column reads and writes its own field: marking one leaves every other
// column at its default, so no two columns alias a field.
TEST(ProfileColumnsTest, EachColumnOwnsOneField) {
  for (const ProfileColumn& marked : ProfileColumns()) {
    SCOPED_TRACE(marked.name);
    Profile p;
    Mark(marked, p);
    EXPECT_NE(p, Profile());
    for (const ProfileColumn& other : ProfileColumns()) {
      EXPECT_EQ(HoldsDefault(other, p), &other != &marked) << other.name;
    }
  }
}

TEST(ProfileColumnsTest, ReachesTheNewFields) {
  Profile p;
  for (const ProfileColumn& column : ProfileColumns()) Mark(column, p);
  EXPECT_EQ(p.method_version, 7);
  EXPECT_EQ(p.conditions.gpu_temperature_c, 7.0);
  EXPECT_EQ(p.conditions.dispatch_ops_per_s, 7.0);
  EXPECT_EQ(p.conditions.python_op_us, 7.0);
  EXPECT_EQ(p.conditions.torchscript_op_us, 7.0);
  EXPECT_EQ(p.iteration.count, 7);
  EXPECT_EQ(p.agent_version, "marked");
}

}  // namespace
}  // namespace perfcast::models
