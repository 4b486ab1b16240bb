#include "predictor/collectives.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"

namespace perfcast::predictor {
namespace {

double RingSeconds(double steps, double bus_factor, double bytes, const Link& link) {
  return steps * link.latency_us * 1e-6 + bus_factor * bytes / (link.bus_gbs * 1e9);
}

}  // namespace

absl::string_view CollectiveName(Collective collective) {
  switch (collective) {
    case Collective::kAllReduce:
      return "allreduce";
    case Collective::kAllGather:
      return "allgather";
    case Collective::kReduceScatter:
      return "reducescatter";
    case Collective::kPointToPoint:
      return "p2p";
  }
  return "unknown";
}

absl::StatusOr<double> CollectiveSeconds(Collective collective, CollectiveAlgorithm algorithm,
                                         double bytes, int gpus, const Link& link) {
  if (gpus < 1) {
    return absl::InvalidArgumentError(absl::StrCat("collective over ", gpus, " GPUs"));
  }
  if (!std::isfinite(bytes) || bytes < 0) {
    return absl::InvalidArgumentError(absl::StrCat("collective of ", bytes, " bytes"));
  }
  if (!(link.bus_gbs > 0) || !std::isfinite(link.bus_gbs) || !(link.latency_us >= 0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "link needs a positive bandwidth and a non-negative latency (", link.bus_gbs, " GB/s, ",
        link.latency_us, " us)"));
  }
  if (bytes == 0) return 0.0;
  if (collective == Collective::kPointToPoint) return RingSeconds(1, 1, bytes, link);
  if (gpus == 1) return 0.0;
  const double n = gpus;
  if (collective != Collective::kAllReduce) return RingSeconds(n - 1, (n - 1) / n, bytes, link);
  const double ring = RingSeconds(2 * (n - 1), 2 * (n - 1) / n, bytes, link);
  const double tree = RingSeconds(2 * std::ceil(std::log2(n)), 2, bytes, link);
  switch (algorithm) {
    case CollectiveAlgorithm::kRing:
      return ring;
    case CollectiveAlgorithm::kTree:
      return tree;
    case CollectiveAlgorithm::kAuto:
      return std::min(ring, tree);
  }
  return ring;
}

absl::StatusOr<Link> SpecLink(const models::GpuSpec& gpu, int gpus, bool cross_node) {
  if (cross_node) {
    const double gbs = gpu.network_gbs > 0 ? gpu.network_gbs : kDefaultNetworkGbs;
    return Link{kSpecLinkEfficiency * gbs, kNetworkLatencyUs, "network"};
  }
  if (gpu.nvlink_gbs > 0 && gpus <= gpu.nvlink_gpus) {
    return Link{kSpecLinkEfficiency * gpu.nvlink_gbs, kIntraNodeLatencyUs, "nvlink"};
  }
  if (gpu.pcie_gbs > 0) {
    return Link{kSpecLinkEfficiency * gpu.pcie_gbs, kIntraNodeLatencyUs, "pcie"};
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "GPU '", gpu.model, "' has no link bandwidth for ", gpus,
      " GPUs in one node: its spec needs pcie_gbs (or nvlink_gbs with nvlink_gpus >= ", gpus,
      ")"));
}

absl::StatusOr<Link> FitAllReduceLink(absl::Span<const AllReduceSample> samples) {
  // Least squares on t = a·x + b·y with x = 2(n-1) (latency steps) and
  // y = 2(n-1)/n · S (bus bytes): a = α, b = 1/B.
  double xx = 0, xy = 0, yy = 0, xt = 0, yt = 0;
  std::set<double> sizes;
  for (const AllReduceSample& s : samples) {
    if (s.gpus < 2 || !(s.bytes > 0) || !(s.seconds > 0) || !std::isfinite(s.bytes) ||
        !std::isfinite(s.seconds)) {
      return absl::InvalidArgumentError(
          absl::StrCat("all-reduce sample needs gpus >= 2 and positive bytes and time, got ",
                       s.gpus, " GPUs, ", s.bytes, " bytes, ", s.seconds, " s"));
    }
    const double n = s.gpus;
    const double x = 2 * (n - 1);
    const double y = 2 * (n - 1) / n * s.bytes;
    xx += x * x;
    xy += x * y;
    yy += y * y;
    xt += x * s.seconds;
    yt += y * s.seconds;
    sizes.insert(s.bytes);
  }
  if (sizes.size() < 2) {
    return absl::FailedPreconditionError(
        "fitting a link needs all-reduce runs of at least two message sizes");
  }
  double alpha = 0, inverse_bandwidth = 0;
  const double det = xx * yy - xy * xy;
  if (det > 0) {
    alpha = (xt * yy - yt * xy) / det;
    inverse_bandwidth = (yt * xx - xt * xy) / det;
  }
  // A negative latency (noise on tiny messages) or a degenerate design: the
  // bandwidth alone, through the origin.
  if (!(alpha >= 0) || !(inverse_bandwidth > 0)) {
    alpha = 0;
    inverse_bandwidth = yt / yy;
  }
  return Link{1.0 / inverse_bandwidth / 1e9, alpha * 1e6, "measured"};
}

absl::StatusOr<OverlapResult> OverlappedAllReduce(double gradient_bytes, int gpus,
                                                  const Link& link, double backward_seconds,
                                                  double bucket_bytes) {
  if (!(bucket_bytes > 0) || !(backward_seconds >= 0) || !std::isfinite(backward_seconds)) {
    return absl::InvalidArgumentError(
        absl::StrCat("overlap needs a positive bucket size and a non-negative backward time, got ",
                     bucket_bytes, " bytes and ", backward_seconds, " s"));
  }
  OverlapResult result;
  // Refuses what the whole all-reduce would refuse (bad link, sizes), even
  // where no bucket is sent.
  RETURN_IF_ERROR(CollectiveSeconds(Collective::kAllReduce, CollectiveAlgorithm::kAuto,
                                    gradient_bytes, gpus, link)
                      .status());
  if (gpus == 1 || gradient_bytes == 0) return result;
  result.buckets = static_cast<int>(std::ceil(gradient_bytes / bucket_bytes));
  double produced = 0, comm_end = 0;
  for (int i = 0; i < result.buckets; ++i) {
    const double size = std::min(bucket_bytes, gradient_bytes - produced);
    produced += size;
    const double ready = backward_seconds * produced / gradient_bytes;
    ASSIGN_OR_RETURN(double seconds, CollectiveSeconds(Collective::kAllReduce,
                                                       CollectiveAlgorithm::kAuto, size, gpus,
                                                       link));
    result.comm_seconds += seconds;
    comm_end = std::max(comm_end, ready) + seconds;
  }
  result.exposed_seconds = std::max(0.0, comm_end - backward_seconds);
  return result;
}

}  // namespace perfcast::predictor
