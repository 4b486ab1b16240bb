// proto/convert.h: domain records survive the wire both ways, enum values a
// client made up are refused by name, and deterministic bytes do not depend
// on the order a map was filled in.
#include "proto/convert.h"

#include "gtest/gtest.h"
#include "models/hardware.h"
#include "models/profile.h"
#include "models/workload.h"

namespace perfcast::proto {
namespace {

models::Node SampleNode() {
  models::Node node;
  node.id = 3;
  node.name = "rack1-h200";
  node.labels = {{"zone", "a"}, {"pool", "train"}};
  node.gpu_count = 8;
  node.gpu.model = "H200-SXM-141GB";
  node.gpu.vendor_name = "NVIDIA H200";
  node.gpu.memory_gib = 141;
  node.gpu.memory_bandwidth_gbs = 4800;
  node.gpu.fp32_tflops = 67;
  node.gpu.bf16_tflops = 989.4;
  node.gpu.nvlink_gbs = 450;
  node.gpu.nvlink_gpus = 8;
  node.host.hostname = "h200-01";
  node.host.cpu_cores = 96;
  node.measured.memory_bandwidth_gbs = 4100;
  node.measured.launch_latency_us = 2.5;
  node.measured.python_op_us = 8.25;
  node.measured.torchscript_op_us = 5.5;
  node.host.python_version = "3.12.3";
  node.host.python_torch_version = "2.11.0+cu130";
  node.source = models::NodeSource::kAgent;
  node.registered_at_us = 1'764'000'000'000'000;
  return node;
}

TEST(ConvertTest, NodeRoundTripsThroughTheWire) {
  const models::Node node = SampleNode();
  v1::Node wire;
  ToProto(node, &wire);
  absl::StatusOr<models::Node> back = FromProto(wire);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, node);
  // Rates never measured stay unmeasured, not zero.
  EXPECT_FALSE(back->measured.fp32_tflops.has_value());
}

// A profile's run conditions, the Python probe's among them, cross the wire;
// those never measured stay unset.
TEST(ConvertTest, ProfileRunConditionsRoundTrip) {
  models::Profile p;
  p.node_name = "rack1-h200";
  p.workload.kind = models::WorkloadKind::kModel;
  p.workload.family = "lstm";
  p.workload.batch_size = 64;
  p.iteration.mean_ms = p.iteration.median_ms = 2.5;
  p.conditions = {.dispatch_ops_per_s = 150000, .python_op_us = 8.25, .torchscript_op_us = 5.5};
  v1::Profile wire;
  ToProto(p, &wire);
  EXPECT_TRUE(wire.conditions().has_python_op_us());
  EXPECT_FALSE(wire.conditions().has_launch_latency_us());
  absl::StatusOr<models::Profile> back = FromProto(wire);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->conditions, p.conditions);
}

TEST(ConvertTest, WorkloadRoundTripsThroughTheWire) {
  models::WorkloadSpec spec;
  spec.kind = models::WorkloadKind::kModel;
  spec.family = "transformer";
  spec.params = {{"layers", 12}, {"hidden", 768}, {"heads", 12}, {"seq_len", 512}};
  spec.batch_size = 32;
  spec.precision = models::Precision::kBf16Amp;
  spec.phase = models::Phase::kTrain;
  spec.optimizer = "adamw";
  v1::Workload wire;
  ToProto(spec, &wire);
  absl::StatusOr<models::WorkloadSpec> back = FromProto(wire);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, spec);
  EXPECT_EQ(back->Key(), spec.Key());
}

TEST(ConvertTest, UnknownEnumValuesAreInvalidArguments) {
  absl::StatusOr<models::Precision> precision = FromProto(static_cast<v1::Precision>(99));
  EXPECT_EQ(precision.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(precision.status().message().find("precision"), std::string::npos)
      << precision.status();
  // Unset means the default, as an old client sends it.
  EXPECT_EQ(*FromProto(v1::PRECISION_UNSPECIFIED), models::Precision::kFp32);

  v1::Workload wire;
  wire.set_family("lstm");
  wire.set_phase(static_cast<v1::Phase>(42));
  EXPECT_EQ(FromProto(wire).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(ConvertTest, AStoredWorkloadStatesItsFamilyNotAModelToResolve) {
  v1::Workload wire;
  wire.set_family("transformer");
  wire.set_torchvision("resnet50");
  EXPECT_EQ(FromProto(wire).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(ConvertTest, DeterministicBytesIgnoreTheOrderAMapWasFilledIn) {
  v1::Workload a;
  a.set_family("transformer");
  (*a.mutable_params())["layers"] = 12;
  (*a.mutable_params())["hidden"] = 768;
  (*a.mutable_params())["heads"] = 12;
  v1::Workload b;
  b.set_family("transformer");
  (*b.mutable_params())["heads"] = 12;
  (*b.mutable_params())["hidden"] = 768;
  (*b.mutable_params())["layers"] = 12;
  EXPECT_EQ(DeterministicBytes(a), DeterministicBytes(b));
  (*b.mutable_params())["layers"] = 24;
  EXPECT_NE(DeterministicBytes(a), DeterministicBytes(b));
  std::string appended = "x";
  AppendDeterministic(a, &appended);
  EXPECT_EQ(appended, "x" + DeterministicBytes(a));
}

}  // namespace
}  // namespace perfcast::proto
