#include "predictor/python_loop.h"

#include <cmath>
#include <string>
#include <utility>

#include "gtest/gtest.h"

namespace perfcast::predictor {
namespace {

PythonLoopTerms Terms() {
  PythonLoopTerms t;
  t.ops_per_launch_train = 2;
  t.ops_per_launch_inference = 1;
  t.fixed_ms = 0.1;
  t.tail = 0.2;
  t.lead = 0.05;
  t.log_error_share_power = 0.5;
  t.log_error_p10_train = -0.3;
  t.log_error_p90_train = 0.3;
  t.log_error_p10_inference = -0.6;
  t.log_error_p90_inference = 0.6;
  t.score_us = 3000;
  t.score_low = 0.8;
  t.score_high = 1.25;
  t.reference_us = 10;
  t.reference_low = 0.5;
  t.reference_high = 2;
  return t;
}

constexpr models::ImplementationEffects kNone;

// A step that dispatches `launches` kernels and no Python calls.
HostWork Launches(double launches) { return {.launches = launches}; }

TEST(ComposePythonStepTest, GpuBoundStepIsGpuTimePlusTheFirstLaunches) {
  // 100 launches at 10 us, one op each: 1 ms of host work under 50 ms of GPU work.
  const PythonStep step =
      ComposePythonStep(50, Launches(100), models::Phase::kInference, kNone, 10, Terms());
  EXPECT_DOUBLE_EQ(step.host_ms, 0.1 + 1.0);
  EXPECT_FALSE(step.host_bound);
  EXPECT_DOUBLE_EQ(step.step_ms, 50 + 0.05 * 1.1);
}

TEST(ComposePythonStepTest, HostBoundStepIsHostTimePlusTheGpuTail) {
  // 1000 launches at 10 us, two ops each in training: 20 ms of host work, 2 ms of GPU work.
  const PythonStep step =
      ComposePythonStep(2, Launches(1000), models::Phase::kTrain, kNone, 10, Terms());
  EXPECT_DOUBLE_EQ(step.host_ms, 0.1 + 20.0);
  EXPECT_TRUE(step.host_bound);
  EXPECT_DOUBLE_EQ(step.step_ms, 20.1 + 0.2 * 2);
}

TEST(ComposePythonStepTest, HostTimeCountsPythonCallsBesideKernelLaunches) {
  PythonLoopTerms t = Terms();
  t.ops_per_call_inference = 1;
  t.ops_per_launch_inference = 0.25;
  t.fixed_ms = 0;
  // A 4-layer LSTM over 96 steps: five Python calls launch hundreds of cuDNN
  // kernels, whose host work is the framework's, not the interpreter's.
  const models::WorkloadDescriptor lstm =
      *models::Describe({.kind = models::WorkloadKind::kModel,
                         .family = "lstm",
                         .params = {{"layers", 4}, {"seq_len", 96}},
                         .batch_size = 64,
                         .phase = models::Phase::kInference});
  const HostWork work = HostWorkOf(lstm);
  EXPECT_DOUBLE_EQ(work.python_calls, 5);
  EXPECT_DOUBLE_EQ(work.launches, lstm.kernel_launches);
  const PythonStep step = ComposePythonStep(0.1, work, models::Phase::kInference, kNone, 10, t);
  EXPECT_NEAR(step.host_ms, (5 + 0.25 * lstm.kernel_launches) * 10 / 1e3, 1e-12);
  // A call is priced at ops_per_call whatever it launches.
  EXPECT_NEAR(ComposePythonStep(0.1, {.python_calls = 5}, models::Phase::kInference, kNone, 10, t)
                  .host_ms,
              5 * 10 / 1e3, 1e-12);
}

TEST(ComposePythonStepTest, NeverFasterThanTheCppStep) {
  for (double g : {0.01, 1.0, 10.0, 1000.0}) {
    for (double launches : {0.0, 10.0, 1e4}) {
      EXPECT_GE(ComposePythonStep(g, Launches(launches), models::Phase::kTrain, kNone, 8, Terms())
                    .step_ms,
                g);
    }
  }
}

// A host sync per forward drains the queue: it costs most where host and GPU
// time are alike, little where either dominates, and by phase.
TEST(ComposePythonStepTest, AHostSyncCostsMostWhereHostAndGpuAreAlike) {
  PythonLoopTerms t = Terms();
  t.sync_drain_inference = 0.5;
  t.sync_drain_train = 0.25;
  const models::ImplementationEffects sync{.host_syncs_per_forward = 1};
  // 5 ms of host work (0.1 + 490 launches at 10 us) against 5 ms on the GPU.
  const PythonStep plain =
      ComposePythonStep(5, Launches(490), models::Phase::kInference, kNone, 10, t);
  const PythonStep balanced =
      ComposePythonStep(5, Launches(490), models::Phase::kInference, sync, 10, t);
  EXPECT_DOUBLE_EQ(balanced.host_ms, 5);
  EXPECT_DOUBLE_EQ(balanced.step_ms, plain.step_ms + 0.5 * 5);
  // The same host under 100 ms of GPU work: 0.5 x 5^2 / 100.
  const PythonStep gpu_bound =
      ComposePythonStep(100, Launches(490), models::Phase::kInference, sync, 10, t);
  EXPECT_DOUBLE_EQ(
      gpu_bound.step_ms,
      ComposePythonStep(100, Launches(490), models::Phase::kInference, kNone, 10, t).step_ms +
          0.125);
  // Training: 2 ops per launch, 9.9 ms of host work against 5 ms; the train drain.
  const PythonStep train = ComposePythonStep(5, Launches(490), models::Phase::kTrain, sync, 10, t);
  EXPECT_DOUBLE_EQ(
      train.step_ms,
      ComposePythonStep(5, Launches(490), models::Phase::kTrain, kNone, 10, t).step_ms +
          0.25 * 5 * 5 / 9.9);
}

// A heavy Python dispatcher (Hugging Face's BERT) scales the host's time,
// not the GPU's: it moves a step that is host-bound, not one the GPU bounds.
TEST(ComposePythonStepTest, AHeavyDispatcherScalesTheHostTime) {
  PythonLoopTerms t = Terms();
  t.heavy_dispatch_host_scale = 2;
  const models::ImplementationEffects heavy{.heavy_python_dispatch = true};
  // 5 ms of host work (0.1 + 490 launches at 10 us) against 4 ms on the GPU.
  const PythonStep plain =
      ComposePythonStep(4, Launches(490), models::Phase::kInference, kNone, 10, t);
  const PythonStep scaled =
      ComposePythonStep(4, Launches(490), models::Phase::kInference, heavy, 10, t);
  EXPECT_DOUBLE_EQ(scaled.host_ms, 2 * plain.host_ms);
  EXPECT_TRUE(scaled.host_bound);
  EXPECT_DOUBLE_EQ(scaled.step_ms, 10 + 0.2 * 4);
  // Under 100 ms of GPU work the doubled host time shows only in the lead.
  EXPECT_DOUBLE_EQ(
      ComposePythonStep(100, Launches(490), models::Phase::kInference, heavy, 10, t).step_ms,
      ComposePythonStep(100, Launches(490), models::Phase::kInference, kNone, 10, t).step_ms +
          0.05 * 5);
}

// The attention slow path scales the GPU's step where torchvision takes it:
// in training and under autocast, never in fp32 inference (its fast path).
TEST(ImplementationGpuFactorTest, TheSlowPathByPrecisionAndPhase) {
  PythonLoopTerms t = Terms();
  t.slow_path_autocast_inference = 1.2;
  t.slow_path_autocast_train = 1.1;
  t.slow_path_train = 1.05;
  const models::ImplementationEffects slow{.attention_slow_path = true};
  models::WorkloadSpec spec;
  spec.precision = models::Precision::kBf16Amp;
  spec.phase = models::Phase::kInference;
  EXPECT_DOUBLE_EQ(ImplementationGpuFactor(slow, spec, t), 1.2);
  EXPECT_DOUBLE_EQ(ImplementationGpuFactor(kNone, spec, t), 1);
  spec.phase = models::Phase::kTrain;
  EXPECT_DOUBLE_EQ(ImplementationGpuFactor(slow, spec, t), 1.1);
  spec.precision = models::Precision::kFp32;
  EXPECT_DOUBLE_EQ(ImplementationGpuFactor(slow, spec, t), 1.05);
  spec.phase = models::Phase::kInference;
  EXPECT_DOUBLE_EQ(ImplementationGpuFactor(slow, spec, t), 1);
}

TEST(PythonLoopTermsTest, ShippedTermsParse) {
  const PythonLoopTerms& t = FittedPythonLoopTerms();
  EXPECT_GT(t.ops_per_launch_train, 0);
  EXPECT_GT(t.score_us, 0);
  EXPECT_LE(t.log_error_p10_train, 0);
  EXPECT_GE(t.log_error_p90_train, 0);
  EXPECT_LE(t.log_error_p10_inference, 0);
  EXPECT_GE(t.log_error_p90_inference, 0);
  EXPECT_FALSE(t.source.empty());
}

TEST(PythonLoopTermsTest, RefusesMissingAndOutOfRangeTerms) {
  EXPECT_EQ(PythonLoopTerms::FromJson("[]").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(PythonLoopTerms::FromJson(R"({"ops_per_launch_train": 1})").status().code(),
            absl::StatusCode::kInvalidArgument);
  const std::string good =
      R"({"ops_per_launch_train": 2, "ops_per_launch_inference": 1, "fixed_ms": 0.1,
          "ops_per_call_train": 0.5, "ops_per_call_inference": 0.25,
          "tail": 0.2, "lead": 0.05, "log_error_p10_train": -0.3,
          "log_error_p90_train": 0.3, "log_error_p10_inference": -0.6,
          "log_error_p90_inference": 0.6,
          "log_error_share_power": 0.5,
          "score_us": 3000, "score_low": 0.8, "score_high": 1.25, "probe_state_factor": 1.2,
          "reference_us": 10,
          "reference_low": 0.5, "reference_high": 2, "sync_drain_train": 0,
          "sync_drain_inference": 0.5, "slow_path_autocast_inference": 1.2,
          "slow_path_autocast_train": 1, "slow_path_train": 1.1,
          "heavy_dispatch_host_scale": 1.5})";
  ASSERT_TRUE(PythonLoopTerms::FromJson(good).ok());
  std::string bad = good;
  bad.replace(bad.find("\"tail\": 0.2"), 11, "\"tail\": 1.5");
  absl::StatusOr<PythonLoopTerms> refused = PythonLoopTerms::FromJson(bad);
  ASSERT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("tail"), std::string::npos);
  // A slow path that made the GPU faster is no slow path.
  bad = good;
  bad.replace(bad.find("\"slow_path_train\": 1.1"), 22, "\"slow_path_train\": 0.9");
  refused = PythonLoopTerms::FromJson(bad);
  ASSERT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("slow_path_train"), std::string::npos);
  // Nor is a heavier dispatcher one that made the host faster.
  bad = good;
  bad.replace(bad.find("\"heavy_dispatch_host_scale\": 1.5"), 32,
              "\"heavy_dispatch_host_scale\": 0.5");
  refused = PythonLoopTerms::FromJson(bad);
  ASSERT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("heavy_dispatch_host_scale"), std::string::npos);
  // A loop's process that paid less than the probe's fresh one is no state.
  bad = good;
  bad.replace(bad.find("\"probe_state_factor\": 1.2"), 25, "\"probe_state_factor\": 0.2");
  refused = PythonLoopTerms::FromJson(bad);
  ASSERT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("probe_state_factor"), std::string::npos);
  // The effects' terms are required like the others.
  bad = good;
  bad.replace(bad.find(", \"sync_drain_train\": 0"), 23, "");
  EXPECT_EQ(PythonLoopTerms::FromJson(bad).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(HostCostOfTest, CpuScoreElseReference) {
  models::Node measured;
  measured.measured.cpu_single_thread_score = 300;
  const PythonHostCost from_score = HostCostOf(measured, Terms());
  EXPECT_EQ(from_score.source, HostCostSource::kCpuScore);
  EXPECT_DOUBLE_EQ(from_score.per_op_us, 10);
  EXPECT_DOUBLE_EQ(from_score.low_us, 8);
  EXPECT_DOUBLE_EQ(from_score.high_us, 12.5);

  const PythonHostCost unknown = HostCostOf(models::Node{}, Terms());
  EXPECT_EQ(unknown.source, HostCostSource::kReference);
  EXPECT_DOUBLE_EQ(unknown.per_op_us, 10);
  EXPECT_LT(unknown.high_us / unknown.low_us, 4.01);
  EXPECT_GT(unknown.high_us / unknown.low_us, from_score.high_us / from_score.low_us);
}

// One probe reading samples one of a host's two levels: a node with a CPU
// score prices from it, and its answer says what the probe read; a node with
// only a probe prices with it, and only the loop's own scatter widens its
// answer: narrower than the CPU score's estimate of the same cost.
TEST(HostCostOfTest, TheCpuScoreBeforeTheProbe) {
  models::Node node;
  node.name = "h200-a";
  node.measured.cpu_single_thread_score = 300;
  node.measured.python_op_us = 12;
  const PythonHostCost both = HostCostOf(node, Terms());
  EXPECT_EQ(both.source, HostCostSource::kCpuScore);
  EXPECT_DOUBLE_EQ(both.per_op_us, 10);
  EXPECT_DOUBLE_EQ(both.probed_us, 12);
  const std::string note = PythonLoopNote(both, node.name);
  EXPECT_NE(note.find("CPU score; the agent's Python probe on h200-a read 12.0 us"),
            std::string::npos)
      << note;

  node.measured.cpu_single_thread_score.reset();
  const PythonHostCost probed = HostCostOf(node, Terms());
  EXPECT_EQ(probed.source, HostCostSource::kProbe);
  EXPECT_EQ(HostCostSourceName(probed.source), "probe");
  EXPECT_EQ(probed.probed_on, "h200-a");
  EXPECT_DOUBLE_EQ(probed.per_op_us, 12);
  EXPECT_DOUBLE_EQ(probed.low_us, 12);
  EXPECT_DOUBLE_EQ(probed.high_us, 12);

  // Where the loop's scatter is narrower than the cost's band, the cost's
  // band sets the interval: the probe's is the narrower.
  PythonLoopTerms narrow = Terms();
  narrow.log_error_p10_train = -0.05;
  narrow.log_error_p90_train = 0.05;
  node.measured.python_op_us = 10;
  double ms = 2, lo = 1.8, hi = 2.2;
  ApplyPythonLoop(Launches(1000), models::Phase::kTrain, kNone, HostCostOf(node, narrow), narrow,
                  ms, lo, hi);
  node.measured.python_op_us.reset();
  node.measured.cpu_single_thread_score = 300;
  const PythonHostCost scored = HostCostOf(node, narrow);
  ASSERT_EQ(scored.source, HostCostSource::kCpuScore);
  ASSERT_DOUBLE_EQ(scored.per_op_us, 10);
  double scored_ms = 2, scored_lo = 1.8, scored_hi = 2.2;
  ApplyPythonLoop(Launches(1000), models::Phase::kTrain, kNone, scored, narrow, scored_ms,
                  scored_lo, scored_hi);
  EXPECT_DOUBLE_EQ(ms, scored_ms);
  EXPECT_LT(hi / lo, scored_hi / scored_lo);
}

// The probe reads a fresh process; the terms are in a loop's process's units:
// a probed cost is the reading times the state factor, and the answer says
// what the probe read.
TEST(HostCostOfTest, AProbeIsPricedInTheLoopsState) {
  PythonLoopTerms terms = Terms();
  terms.probe_state_factor = 1.25;
  models::Node node;
  node.name = "h200-a";
  node.measured.python_op_us = 8;
  const PythonHostCost probed = HostCostOf(node, terms);
  EXPECT_EQ(probed.source, HostCostSource::kProbe);
  EXPECT_DOUBLE_EQ(probed.probed_us, 8);
  EXPECT_DOUBLE_EQ(probed.per_op_us, 10);
  EXPECT_DOUBLE_EQ(probed.low_us, 10);
  EXPECT_DOUBLE_EQ(probed.high_us, 10);
  const std::string note = PythonLoopNote(probed, node.name);
  EXPECT_NE(note.find("(10.0 us)"), std::string::npos) << note;
  EXPECT_NE(note.find("read 8.0 us in a fresh process"), std::string::npos) << note;
  // At factor 1 the note stays as it was.
  EXPECT_EQ(PythonLoopNote(HostCostOf(node, Terms()), node.name).find("fresh process"),
            std::string::npos);

  models::Node gpu;
  gpu.measured.python_op_us_of_gpu = {9, 5, 7};
  const PythonHostCost fleet = HostCostOf(gpu, terms);
  EXPECT_DOUBLE_EQ(fleet.per_op_us, 7 * 1.25);
  EXPECT_DOUBLE_EQ(fleet.low_us, 5 * 1.25);
  EXPECT_DOUBLE_EQ(fleet.high_us, 9 * 1.25);
  EXPECT_EQ(fleet.probed_nodes, 3);
}

// A catalog GPU prices with the probes stored for nodes of that GPU model:
// their median, the band spanning them; a node's own probe comes first, and
// without probes the CPU score's estimate stays.
TEST(HostCostOfTest, ACatalogGpuTakesItsNodesProbes) {
  models::Node gpu;
  gpu.name = "catalog:H200-SXM-141GB";
  gpu.measured.python_op_us_of_gpu = {9, 5, 7};
  PythonHostCost fleet = HostCostOf(gpu, Terms());
  EXPECT_EQ(fleet.source, HostCostSource::kProbe);
  EXPECT_EQ(fleet.probed_nodes, 3);
  EXPECT_EQ(fleet.probed_on, "");
  EXPECT_DOUBLE_EQ(fleet.per_op_us, 7);
  EXPECT_DOUBLE_EQ(fleet.low_us, 5);
  EXPECT_DOUBLE_EQ(fleet.high_us, 9);
  EXPECT_NE(PythonLoopNote(fleet, gpu.name).find("median of the agent's Python probes on 3 nodes"),
            std::string::npos)
      << PythonLoopNote(fleet, gpu.name);
  gpu.measured.python_op_us_of_gpu = {8, 4};
  fleet = HostCostOf(gpu, Terms());
  EXPECT_DOUBLE_EQ(fleet.per_op_us, 6);
  EXPECT_EQ(fleet.probed_nodes, 2);

  gpu.measured.python_op_us = 12;
  EXPECT_EQ(HostCostOf(gpu, Terms()).probed_nodes, 0);
  EXPECT_DOUBLE_EQ(HostCostOf(gpu, Terms()).per_op_us, 12);
  gpu.measured.python_op_us.reset();
  gpu.measured.python_op_us_of_gpu.clear();
  gpu.measured.cpu_single_thread_score = 300;
  EXPECT_EQ(HostCostOf(gpu, Terms()).source, HostCostSource::kCpuScore);
}

TEST(ApplyPythonLoopTest, HostBoundAnswerTakesTheHostAndAWiderBand) {
  double ms = 2, lo = 1.8, hi = 2.2;
  const PythonHostCost cost{.per_op_us = 10, .low_us = 8, .high_us = 12.5,
                            .source = HostCostSource::kCpuScore};
  const PythonLoopPart part =
      ApplyPythonLoop(Launches(1000), models::Phase::kTrain, kNone, cost, Terms(), ms, lo, hi);
  EXPECT_TRUE(part.step.host_bound);
  EXPECT_DOUBLE_EQ(part.cpp_ms, 2);
  EXPECT_DOUBLE_EQ(ms, 20.1 + 0.2 * 2);
  EXPECT_DOUBLE_EQ(part.added_ms, ms - 2);
  EXPECT_LE(lo, ms);
  EXPECT_GE(hi, ms);
  // The cost's band and the loop's scatter: wider than the C++ band's ±10%.
  EXPECT_GT(hi / lo, 2.2 / 1.8);
  // Below: the C++ band's low end composed at the cost's, or the loop's
  // scatter at the host's share around the step, whichever reaches further.
  const double share = part.added_ms / ms;
  EXPECT_NEAR(lo,
              std::min(0.1 + 2 * 1000 * 8 / 1e3 + 0.2 * 1.8, ms * std::exp(-0.3 * std::sqrt(share))),
              1e-9);
}

// The scatter was measured around answers that carry the C++ error already:
// it bounds the band, it does not add to a C++ band that reaches further.
TEST(ApplyPythonLoopTest, TheLoopsScatterBoundsTheBandItDoesNotWidenIt) {
  const PythonHostCost cost{.per_op_us = 10, .low_us = 10, .high_us = 10,
                            .source = HostCostSource::kProbe};
  // Near the boundary (the host adds a fifth of the step): a narrow C++ band
  // takes the scatter, which reaches share^0.5, not share.
  double ms = 2, lo = 1.96, hi = 2.04;
  PythonLoopPart part =
      ApplyPythonLoop(Launches(100), models::Phase::kTrain, kNone, cost, Terms(), ms, lo, hi);
  const double share = part.added_ms / ms;
  ASSERT_NEAR(share, 0.2, 1e-9);
  EXPECT_NEAR(lo, ms * std::exp(-0.3 * std::sqrt(share)), 1e-9);
  EXPECT_NEAR(hi, ms * std::exp(0.3 * std::sqrt(share)), 1e-9);
  // A C++ band that reaches further stands as composed.
  ms = 2, lo = 1.96, hi = 8;
  ApplyPythonLoop(Launches(100), models::Phase::kTrain, kNone, cost, Terms(), ms, lo, hi);
  EXPECT_NEAR(
      hi, ComposePythonStep(8, Launches(100), models::Phase::kTrain, kNone, 10, Terms()).step_ms,
      1e-9);
}

// Each phase's scatter: the same host share reaches twice as far in an
// inference forward (the terms above) as in a training step.
TEST(ApplyPythonLoopTest, EachPhaseTakesItsOwnScatter) {
  const PythonHostCost cost{.per_op_us = 10, .low_us = 10, .high_us = 10,
                            .source = HostCostSource::kProbe};
  const auto band = [&](models::Phase phase, double launches) {
    double ms = 2, lo = 1.96, hi = 2.04;
    const PythonLoopPart part =
        ApplyPythonLoop(Launches(launches), phase, kNone, cost, Terms(), ms, lo, hi);
    const double reach = std::sqrt(part.added_ms / ms);
    return std::make_pair(std::log(lo / ms) / reach, std::log(hi / ms) / reach);
  };
  // Train dispatches 2 ops per launch, inference 1: the same host work.
  const auto [train_lo, train_hi] = band(models::Phase::kTrain, 100);
  const auto [inference_lo, inference_hi] = band(models::Phase::kInference, 200);
  EXPECT_NEAR(train_lo, -0.3, 1e-9);
  EXPECT_NEAR(train_hi, 0.3, 1e-9);
  EXPECT_NEAR(inference_lo, -0.6, 1e-9);
  EXPECT_NEAR(inference_hi, 0.6, 1e-9);
}

TEST(PythonLoopNoteTest, SaysWhereTheCostCameFrom) {
  const std::string scored =
      PythonLoopNote({.per_op_us = 10, .source = HostCostSource::kCpuScore}, "h200-a");
  EXPECT_NE(scored.find("CPU score"), std::string::npos);
  EXPECT_NE(scored.find("h200-a"), std::string::npos);
  EXPECT_NE(PythonLoopNote({.per_op_us = 10}, "catalog:H200").find("reference host"),
            std::string::npos);
  const std::string probed = PythonLoopNote(
      {.per_op_us = 10, .source = HostCostSource::kProbe, .probed_on = "h200-b"}, "h200-b");
  EXPECT_NE(probed.find("measured by the agent's Python probe on h200-b"), std::string::npos)
      << probed;
}

}  // namespace
}  // namespace perfcast::predictor
