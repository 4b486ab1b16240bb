#include "profiler/multi_gpu.h"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "db/sqlite_store.h"
#include "db/store.h"
#include "models/descriptor.h"
#include "nlohmann/json.hpp"
#include "profiler/device.h"
#include "profiler/distributed.h"
#include "profiler/fingerprint.h"
#include "profiler/runner.h"
#include "profiler/stats.h"
#ifdef PERFCAST_AGENT_PROXIES
#include "profiler/proxy_session.h"
#endif

namespace perfcast::profiler {
namespace {

// Long enough for the slowest peer's set-up (model build, the single-GPU
// reference steps of rank 0), short enough that a dead peer ends the run.
constexpr std::chrono::milliseconds kGroupTimeout = std::chrono::minutes(10);

}  // namespace

absl::Status RunCollectivesWorker(const DeviceOptions& device_options, const WorkerPlace& place,
                                  const CollectivesFlags& flags) {
  ASSIGN_OR_RETURN(std::vector<int64_t> sizes, ParseMessageSizes(flags.sizes));
  ASSIGN_OR_RETURN(Device device, Device::Open(device_options));
  ASSIGN_OR_RETURN(std::unique_ptr<Communicator> communicator,
                   Communicator::Join(place, device, kGroupTimeout));
  AllReduceMeasurer measurer(device, *communicator);
  const std::vector<models::WorkloadSpec> specs = AllReduceSpecs(sizes, place.world);
  // One pass over the sizes: every rank must issue the same collectives in
  // the same order, which the run loop's reversed second pass would only
  // complicate.
  TimingPolicy timing;
  timing.passes = 1;
  if (place.rank != 0) {
    // The peers issue the same collectives; rank 0 keeps the results.
    for (const models::WorkloadSpec& spec : specs) {
      absl::StatusOr<Measurement> ignored = measurer.Measure(spec, timing, 0);
      (void)ignored;
    }
    return absl::OkStatus();
  }
  ASSIGN_OR_RETURN(models::Node node, Fingerprint(device_options, flags.name, true));
  if (node.gpu_count > 0) node.gpu_count = flags.node_gpus > 0 ? flags.node_gpus : place.world;
  ASSIGN_OR_RETURN(std::unique_ptr<db::Store> store, db::OpenSqliteAgentStore(flags.out));
  RunOptions options;
  options.progress = &std::cerr;
  ASSIGN_OR_RETURN(RunSummary summary,
                   RunWorkloads(specs, timing, node, measurer, *store, options));
  std::cerr << absl::StrCat("perfcast-agent: all-reduce over ", place.world, " ",
                            device.is_cuda() ? "GPUs (NCCL)" : "processes (Gloo)", ": ",
                            summary.measured, " sizes measured, ", summary.skipped,
                            " skipped -> ", flags.out, "\n");
  return absl::OkStatus();
}

absl::StatusOr<models::WorkloadSpec> CheckDdpFlags(const DdpFlags& flags, int world) {
  ASSIGN_OR_RETURN(models::WorkloadSpec parsed, models::ParseWorkloadKey(flags.workload));
  ASSIGN_OR_RETURN(models::WorkloadSpec spec, models::NormalizeSpec(parsed));
  if (spec.kind != models::WorkloadKind::kModel || spec.phase != models::Phase::kTrain) {
    return absl::InvalidArgumentError(
        absl::StrCat(flags.workload, ": a data-parallel run needs a model workload in training"));
  }
  if (world < 1 || spec.batch_size % world != 0) {
    return absl::InvalidArgumentError(absl::StrCat("the global batch ", spec.batch_size,
                                                   " does not split over ", world, " GPUs"));
  }
  if (flags.steps < 1 || flags.warmup < 0 || !(flags.bucket_mib > 0)) {
    return absl::InvalidArgumentError("ddp needs --steps >= 1, --warmup >= 0, --bucket-mib > 0");
  }
  return spec;
}

absl::Status RunDdpWorker(const DeviceOptions& device_options, const WorkerPlace& place,
                          const DdpFlags& flags) {
#ifndef PERFCAST_AGENT_PROXIES
  (void)device_options;
  (void)place;
  (void)flags;
  return absl::FailedPreconditionError("this perfcast-agent was built without the proxy models");
#else
  ASSIGN_OR_RETURN(models::WorkloadSpec spec, CheckDdpFlags(flags, place.world));
  models::WorkloadSpec local = spec;
  local.batch_size = spec.batch_size / place.world;
  ASSIGN_OR_RETURN(Device device, Device::Open(device_options));
  ASSIGN_OR_RETURN(std::unique_ptr<Communicator> communicator,
                   Communicator::Join(place, device, kGroupTimeout));

  nlohmann::json result;
  absl::Status status = RunGuarded(device, [&]() -> absl::Status {
    ASSIGN_OR_RETURN(std::unique_ptr<ProxySession> session,
                     ProxySession::Create(device, local, device_options.seed));
    // Steady-state steps from a prefetched ring (as the agent's profiles),
    // timed one block per step so that the median drops stragglers; the
    // backward (with the exposed gradient averaging) from instrumented steps.
    session->Prefetch(8);
    auto timed = [&](int steps) {
      std::vector<double> total, backward;
      for (int i = 0; i < flags.warmup; ++i) session->SteadyStep();
      for (int i = 0; i < steps; ++i) total.push_back(session->TimedBlockMs(1));
      for (int i = 0; i < std::min(steps, 3); ++i) {
        backward.push_back(session->InstrumentedStep().backward_ms);
      }
      return std::pair{Summarize(total), Summarize(backward)};
    };
    if (place.rank == 0) {
      const auto [alone, alone_backward] = timed(flags.steps);
      result["single_step_ms"] = alone.median_ms;
      result["single_backward_ms"] = alone_backward.median_ms;
    }
    communicator->Barrier();
    GradientBuckets buckets(*communicator, session->parameters(),
                            flags.bucket_mib * 1024 * 1024);
    session->set_after_backward([&buckets] { buckets.Finish(); });
    communicator->Barrier();
    const auto [together, together_backward] = timed(flags.steps);
    result["ddp_step_ms"] = together.median_ms;
    result["ddp_backward_ms"] = together_backward.median_ms;
    result["buckets"] = buckets.buckets();
    communicator->Barrier();
    return absl::OkStatus();
  });
  if (!status.ok() || place.rank != 0) return status;
  result["workload"] = spec.Key();
  result["per_gpu_batch"] = local.batch_size;
  result["gpus"] = place.world;
  result["backend"] = device.is_cuda() ? "nccl" : "gloo";
  result["bucket_mib"] = flags.bucket_mib;
  result["agent_version"] = kAgentVersion;
  std::ofstream out(flags.out, std::ios::app);
  out << result.dump() << "\n";
  if (!out) return absl::InternalError(absl::StrCat("cannot write ", flags.out));
  std::cerr << "perfcast-agent: " << result.dump() << "\n";
  return absl::OkStatus();
#endif
}

}  // namespace perfcast::profiler
