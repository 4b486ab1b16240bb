// The communication model of multi-GPU training: the time of one collective
// (all-reduce, all-gather, reduce-scatter, point-to-point) from its message
// size, the number of GPUs and the link between them, by the alpha-beta
// model that NCCL's own performance notes use:
//
//   ring all-reduce        2(n-1) α + 2(n-1)/n · S/B
//   tree all-reduce        2⌈log2 n⌉ α + 2 · S/B          (double binary tree, pipelined)
//   ring all-gather        (n-1) α + (n-1)/n · S/B       (S: the gathered size)
//   ring reduce-scatter    (n-1) α + (n-1)/n · S/B       (S: the input size)
//   point-to-point         α + S/B
//
// where S is the message in bytes, α the per-step latency and B the bus
// bandwidth a collective sustains per GPU and direction. B is what
// nccl-tests calls "busbw", so a measured busbw plugs in unchanged; from a
// spec sheet it is the link bandwidth times kSpecLinkEfficiency.
//
// Gradient all-reduce overlapped with the backward pass is modelled as
// PyTorch DDP runs it: gradients are packed into buckets (25 MB by default)
// in the order backward produces them, and a bucket is all-reduced once it
// is full and the previous bucket's all-reduce is done; whatever runs past
// the end of backward is exposed.
//
// Thread-safe: plain values and pure functions.
#ifndef PERFCAST_PREDICTOR_COLLECTIVES_H_
#define PERFCAST_PREDICTOR_COLLECTIVES_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "models/hardware.h"

namespace perfcast::predictor {

enum class Collective { kAllReduce, kAllGather, kReduceScatter, kPointToPoint };
enum class CollectiveAlgorithm {
  kRing,
  kTree,  // all-reduce only; other collectives run as rings
  kAuto,  // the faster of ring and tree, as NCCL's tuner picks
};

// "allreduce", "allgather", "reducescatter", "p2p".
absl::string_view CollectiveName(Collective collective);

// A link as the alpha-beta model sees it.
struct Link {
  double bus_gbs = 0;     // sustained bus bandwidth per GPU and direction, GB/s
  double latency_us = 0;  // α: per ring step / tree level
  // Where B came from: "measured" (an all-reduce benchmark on the node),
  // "nvlink", "pcie" or "network" (spec sheet × kSpecLinkEfficiency).
  std::string source;

  friend bool operator==(const Link&, const Link&) = default;
};

// The fraction of a link's spec bandwidth that NCCL collectives sustain as
// bus bandwidth: public nccl-tests all-reduce figures are ~230 GB/s busbw on
// 8 × A100 SXM (NVLink 3, 300 GB/s per direction) and ~370 GB/s on 8 × H100
// SXM without NVLink SHARP (NVLink 4, 450 GB/s), both about 0.8.
inline constexpr double kSpecLinkEfficiency = 0.8;
// Per-step latencies: an NCCL ring step inside one node costs a few
// microseconds; a hop over the network (InfiniBand/RoCE) several.
inline constexpr double kIntraNodeLatencyUs = 3.0;
inline constexpr double kNetworkLatencyUs = 8.0;
// Inter-node bandwidth per GPU when the catalog does not know the node's
// network: one 200 Gb/s NIC per GPU.
inline constexpr double kDefaultNetworkGbs = 25.0;
// PyTorch DDP's default bucket_cap_mb.
inline constexpr double kDdpBucketBytes = 25.0 * 1024 * 1024;

// Seconds of one collective of `bytes` over `gpus` GPUs. 0 for one GPU or no
// bytes. InvalidArgument for gpus < 1, negative or non-finite bytes, or a
// link without positive bandwidth.
absl::StatusOr<double> CollectiveSeconds(Collective collective, CollectiveAlgorithm algorithm,
                                         double bytes, int gpus, const Link& link);

// The link between GPUs of `gpu` that share one node (NVLink when `gpus`
// fit in its NVLink domain, PCIe otherwise) or, when `cross_node`, the
// network between nodes. InvalidArgument when the spec has no bandwidth for
// that path (e.g. no pcie_gbs for a non-NVLink GPU).
absl::StatusOr<Link> SpecLink(const models::GpuSpec& gpu, int gpus, bool cross_node);

// One run of an all-reduce benchmark: `bytes` over `gpus` GPUs in `seconds`.
struct AllReduceSample {
  double bytes = 0;
  int gpus = 0;
  double seconds = 0;
};

// Fits α and B of the ring all-reduce to benchmark runs by least squares on
// t = 2(n-1) α + 2(n-1)/n · S/B (both coefficients kept non-negative).
// InvalidArgument for a sample with gpus < 2 or non-positive bytes or time;
// FailedPrecondition when fewer than two distinct message sizes leave B
// undetermined.
absl::StatusOr<Link> FitAllReduceLink(absl::Span<const AllReduceSample> samples);

// Gradient all-reduce overlapped with backward, bucketed as DDP does.
struct OverlapResult {
  double comm_seconds = 0;     // all buckets' all-reduce time, as if alone
  double exposed_seconds = 0;  // what runs past the end of backward
  int buckets = 0;
};

// `gradient_bytes` all-reduced over `gpus` GPUs in buckets of `bucket_bytes`
// while a backward pass of `backward_seconds` produces them at an even rate.
// InvalidArgument as CollectiveSeconds, or for a non-positive bucket size or
// negative backward time.
absl::StatusOr<OverlapResult> OverlappedAllReduce(double gradient_bytes, int gpus,
                                                  const Link& link, double backward_seconds,
                                                  double bucket_bytes = kDdpBucketBytes);

}  // namespace perfcast::predictor

#endif  // PERFCAST_PREDICTOR_COLLECTIVES_H_
