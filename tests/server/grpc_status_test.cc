#include "server/grpc_status.h"

#include <string>

#include "gtest/gtest.h"

namespace perfcast::server {
namespace {

TEST(GrpcStatusTest, CodesAndMessagesCrossBothWays) {
  for (const absl::Status& status :
       {absl::OkStatus(), absl::InvalidArgumentError("bad --seq-len"),
        absl::NotFoundError("unknown GPU 'B2000'"), absl::DeadlineExceededError("late"),
        absl::FailedPreconditionError("no fitted model")}) {
    const grpc::Status wire = ToGrpcStatus(status);
    EXPECT_EQ(static_cast<int>(wire.error_code()), static_cast<int>(status.code()));
    EXPECT_EQ(FromGrpcStatus(wire), status);
  }
}

TEST(GrpcStatusTest, AHugeMessageIsCutOnTheWayOutOnly) {
  const std::string huge(10000, 'x');
  const grpc::Status wire = ToGrpcStatus(absl::InvalidArgumentError(huge));
  EXPECT_LT(wire.error_message().size(), huge.size());
  EXPECT_NE(wire.error_message().find("more bytes"), std::string::npos);
  const absl::Status back = FromGrpcStatus(grpc::Status(grpc::StatusCode::NOT_FOUND, huge));
  EXPECT_EQ(back, absl::NotFoundError(huge));
}

}  // namespace
}  // namespace perfcast::server
