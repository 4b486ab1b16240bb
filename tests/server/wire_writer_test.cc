// WireWriter against protobuf's own serialisation of the same message.
#include "server/wire_writer.h"

#include <string>

#include "gtest/gtest.h"
#include "perfcast/v1/predictor.pb.h"
#include "proto/convert.h"

namespace perfcast::server {
namespace {

// Sub-messages of every length class: empty, short, and longer than the
// one byte BeginMessage keeps for their length (>= 128 and >= 16384 bytes),
// each followed by a field, so that a length written wrong shows.
TEST(WireWriterTest, SubMessagesOfAnyLengthAreTheMessagesBytes) {
  using R = v1::PredictResponse;
  using O = v1::OperationEstimate;
  for (size_t label : {0, 5, 120, 200, 20000}) {
    R message;
    v1::OperationEstimate* op = message.add_breakdown();
    op->set_op_class(std::string(label, 'x'));
    op->set_ms(1.25);
    message.add_breakdown()->set_share(0.5);
    message.set_model_id(7);

    std::string bytes = "before";  // appended to
    {
      WireWriter w(&bytes);
      size_t entry = w.BeginMessage(R::kBreakdownFieldNumber);
      w.String(O::kOpClassFieldNumber, std::string(label, 'x'));
      w.Double(O::kMsFieldNumber, 1.25);
      w.Double(O::kShareFieldNumber, 0);
      w.EndMessage(entry);
      entry = w.BeginMessage(R::kBreakdownFieldNumber);
      w.Double(O::kShareFieldNumber, 0.5);
      w.EndMessage(entry);
      w.Int64(R::kModelIdFieldNumber, 7);
    }
    EXPECT_EQ(bytes, "before" + proto::DeterministicBytes(message)) << label;
  }
}

// proto3's defaults are left out, but -0.0 is not zero bits and a negative
// int32 takes ten bytes.
TEST(WireWriterTest, ScalarsFollowProto3) {
  using M = v1::MemoryEstimate;
  M message;
  message.set_peak_bytes(-0.0);
  message.set_fits(true);
  message.set_method("calibrated:lstm/train");
  std::string bytes;
  WireWriter w(&bytes);
  w.Double(M::kPeakBytesFieldNumber, -0.0);
  w.Double(M::kPeakBytesLowFieldNumber, 0.0);
  w.Bool(M::kFitsFieldNumber, true);
  w.String(M::kMethodFieldNumber, "calibrated:lstm/train");
  w.Double(M::kPersistentBytesFieldNumber, 0.0);
  w.Flush();
  EXPECT_EQ(bytes, proto::DeterministicBytes(message));

  v1::PredictResponse response;
  response.set_level(-1);
  std::string level;
  {
    WireWriter again(&level);
    again.Int32(v1::PredictResponse::kLevelFieldNumber, -1);
  }
  EXPECT_EQ(level, proto::DeterministicBytes(response));
}

// Room is kept ahead of the bytes: an answer far larger than the first room
// (sub-messages whose lengths move their bytes up while the string grows)
// is still the message's own serialisation.
TEST(WireWriterTest, GrowsPastItsRoom) {
  using R = v1::PredictResponse;
  using O = v1::OperationEstimate;
  R message;
  std::string bytes;
  {
    WireWriter w(&bytes);
    for (int i = 0; i < 300; ++i) {
      const std::string label(i % 7 == 0 ? 150 + i : i % 40, static_cast<char>('a' + i % 26));
      v1::OperationEstimate* op = message.add_breakdown();
      op->set_op_class(label);
      op->set_ms(i);
      const size_t entry = w.BeginMessage(R::kBreakdownFieldNumber);
      w.String(O::kOpClassFieldNumber, label);
      w.Double(O::kMsFieldNumber, i);
      w.EndMessage(entry);
    }
    for (int i = 0; i < 50; ++i) {
      message.add_features(std::string(i * 10, 'f'));
      w.Bytes(R::kFeaturesFieldNumber, std::string(i * 10, 'f'));
    }
  }
  EXPECT_EQ(bytes, proto::DeterministicBytes(message));
}

}  // namespace
}  // namespace perfcast::server
