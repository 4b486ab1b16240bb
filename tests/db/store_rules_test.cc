// db/store_rules.h: the rules every store applies the same way.
#include "db/store_rules.h"

#include "gtest/gtest.h"
#include "models/profile_columns.h"

namespace perfcast::db {
namespace {

TEST(NodePageStartTest, FirstPageStartsAtZero) {
  absl::StatusOr<int64_t> start = NodePageStart({.page_size = 10});
  ASSERT_TRUE(start.ok()) << start.status();
  EXPECT_EQ(*start, 0);
}

TEST(NodePageStartTest, TokenIsTheLastIdOfThePreviousPage) {
  absl::StatusOr<int64_t> start = NodePageStart({.page_size = 1000, .page_token = "42"});
  ASSERT_TRUE(start.ok()) << start.status();
  EXPECT_EQ(*start, 42);
}

TEST(NodePageStartTest, RefusesBadFilters) {
  for (const NodeFilter& filter : {NodeFilter{.page_size = 0}, NodeFilter{.page_size = 1001},
                                   NodeFilter{.page_token = "abc"},
                                   NodeFilter{.page_token = "-4"},
                                   NodeFilter{.labels = {{"bad key", "x"}}}}) {
    absl::StatusOr<int64_t> start = NodePageStart(filter);
    EXPECT_EQ(start.status().code(), absl::StatusCode::kInvalidArgument)
        << filter.page_size << " '" << filter.page_token << "'";
  }
  EXPECT_EQ(NodePageStart({.page_size = 0}).status().message(),
            "page size must be within 1..1000, got 0");
}

TEST(ProfileInsertColumnCountTest, KeysThenProfileColumns) {
  EXPECT_EQ(ProfileInsertColumnCount(),
            kProfileKeyColumns + static_cast<int>(models::ProfileColumns().size()));
}

}  // namespace
}  // namespace perfcast::db
