#include "base/status_macros.h"

#include <memory>
#include <string>
#include <utility>

#include <gtest/gtest.h>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace perfcast {
namespace {

// Counts its calls so that a test can see how often a macro evaluated it.
struct Counter {
  int calls = 0;
  absl::Status Status(absl::Status result) {
    ++calls;
    return result;
  }
  absl::StatusOr<int> Value(absl::StatusOr<int> result) {
    ++calls;
    return result;
  }
};

absl::Status ReturnIfError(Counter& counter, absl::Status input, bool* reached_end) {
  RETURN_IF_ERROR(counter.Status(std::move(input)));
  *reached_end = true;
  return absl::OkStatus();
}

absl::StatusOr<std::string> ReturnIfErrorInStatusOr(absl::Status input) {
  RETURN_IF_ERROR(input);
  return std::string("reached");
}

absl::StatusOr<int> Doubled(Counter& counter, absl::StatusOr<int> input) {
  ASSIGN_OR_RETURN(int value, counter.Value(std::move(input)));
  return 2 * value;
}

absl::Status AssignExisting(absl::StatusOr<int> input, int* out) {
  ASSIGN_OR_RETURN(*out, std::move(input));
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<int>> MakeOwned(absl::StatusOr<std::unique_ptr<int>> input) {
  ASSIGN_OR_RETURN(std::unique_ptr<int> owned, std::move(input));
  *owned += 1;
  return owned;
}

absl::StatusOr<int> Sum(absl::StatusOr<int> a, absl::StatusOr<int> b) {
  // Two on one line: the hidden temporaries must not collide.
  ASSIGN_OR_RETURN(int x, std::move(a)); ASSIGN_OR_RETURN(int y, std::move(b));
  return x + y;
}

TEST(ReturnIfErrorTest, PassesOnOk) {
  Counter counter;
  bool reached_end = false;
  EXPECT_TRUE(ReturnIfError(counter, absl::OkStatus(), &reached_end).ok());
  EXPECT_TRUE(reached_end);
  EXPECT_EQ(counter.calls, 1);
}

TEST(ReturnIfErrorTest, ReturnsTheErrorUnchanged) {
  Counter counter;
  bool reached_end = false;
  absl::Status error = absl::NotFoundError("node 7 is not registered");
  error.SetPayload("perfcast.test", absl::Cord("payload"));
  absl::Status got = ReturnIfError(counter, error, &reached_end);
  EXPECT_EQ(got, error);
  EXPECT_EQ(got.GetPayload("perfcast.test").value_or(absl::Cord()), "payload");
  EXPECT_FALSE(reached_end);
  EXPECT_EQ(counter.calls, 1);
}

TEST(ReturnIfErrorTest, WorksInAFunctionReturningStatusOr) {
  EXPECT_EQ(ReturnIfErrorInStatusOr(absl::OkStatus()).value(), "reached");
  absl::StatusOr<std::string> got = ReturnIfErrorInStatusOr(absl::InvalidArgumentError("bad"));
  EXPECT_EQ(got.status(), absl::InvalidArgumentError("bad"));
}

TEST(AssignOrReturnTest, PassesTheValue) {
  Counter counter;
  absl::StatusOr<int> got = Doubled(counter, 21);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, 42);
  EXPECT_EQ(counter.calls, 1);
}

TEST(AssignOrReturnTest, ReturnsTheErrorAndEvaluatesOnce) {
  Counter counter;
  absl::StatusOr<int> got = Doubled(counter, absl::FailedPreconditionError("no model fitted"));
  EXPECT_EQ(got.status(), absl::FailedPreconditionError("no model fitted"));
  EXPECT_EQ(counter.calls, 1);
}

TEST(AssignOrReturnTest, AssignsToAnExistingLvalue) {
  int out = 0;
  EXPECT_TRUE(AssignExisting(5, &out).ok());
  EXPECT_EQ(out, 5);
  EXPECT_EQ(AssignExisting(absl::InternalError("x"), &out), absl::InternalError("x"));
  EXPECT_EQ(out, 5);
}

TEST(AssignOrReturnTest, MovesMoveOnlyValues) {
  absl::StatusOr<std::unique_ptr<int>> got = MakeOwned(std::make_unique<int>(1));
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(**got, 2);
  EXPECT_EQ(MakeOwned(absl::UnavailableError("gone")).status(), absl::UnavailableError("gone"));
}

TEST(AssignOrReturnTest, TwoOnOneLine) {
  EXPECT_EQ(Sum(1, 2).value(), 3);
  EXPECT_EQ(Sum(1, absl::AbortedError("b")).status(), absl::AbortedError("b"));
}

}  // namespace
}  // namespace perfcast
