// Effective hardware rates: the denominators of every roofline feature.
//
// A node the agent profiled has measured rates (models::MeasuredRates) and
// those win. A node known only from its spec sheet gets spec rates scaled by
// an efficiency (measured ÷ spec) learned, per rate and per architecture
// generation, from nodes that have both; with no node of its generation the
// mean over the nodes of its vendor and board-power class serves (a
// power-capped inference card sustains a fraction of its boost-clock rate
// that a 700 W board does not), or, where that class has power-bound nodes,
// what the GPU's own board power allows (PowerCappedEfficiency); with none of
// those the mean over all nodes, and with none at all the spec rate is taken
// as is. Every EffectiveRates says which of these it used.
//
// Thread-safe: plain values and pure functions.
#ifndef PERFCAST_PREDICTOR_RATES_H_
#define PERFCAST_PREDICTOR_RATES_H_

#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "models/hardware.h"
#include "models/profile.h"
#include "models/workload.h"

namespace perfcast::predictor {

// Ordered from most to least trustworthy; a prediction reports the worst
// source among the rates it used.
enum class RateSource {
  kMeasured,            // the agent measured it on this node
  kSpecTimesEfficiency, // spec × efficiency of the node's architecture
  kSpecTimesClassEfficiency,   // spec × efficiency of its vendor and power class
  kSpecTimesGlobalEfficiency,  // spec × efficiency averaged over architectures
  kSpec,                // spec sheet (or a documented default) unscaled
};
// "measured", "spec*efficiency", "spec*class-efficiency",
// "spec*global-efficiency", "spec".
absl::string_view RateSourceName(RateSource source);

// Launch latency and host->device bandwidth when nothing was measured: a
// typical CUDA launch-plus-dispatch cost and practical pageable PCIe 4.0.
inline constexpr double kDefaultLaunchLatencyUs = 5.0;
inline constexpr double kDefaultH2dGbs = 12.0;
// LibTorch's eager dispatch of tiny ops on a typical server core, when the
// host's rate was not measured.
inline constexpr double kDefaultDispatchOpsPerS = 50000;

// Learned measured/spec ratios. Keys of the inner maps: "fp32", "tf32",
// "fp16", "bf16", "fp64", "memory" (FP8 and INT8 borrow bf16's). `global` also holds the typical host of
// the measured nodes (geometric means, not ratios): kHostLaunchKey in µs,
// kHostH2dKey in GB/s and kHostDispatchKey in ops/s, which a node without
// host measurements takes instead of the documented defaults.
inline constexpr absl::string_view kHostLaunchKey = "host_launch_latency_us";
inline constexpr absl::string_view kHostH2dKey = "host_h2d_gbs";
inline constexpr absl::string_view kHostDispatchKey = "host_dispatch_ops_per_s";
struct EfficiencyTable {
  std::map<std::string, std::map<std::string, double>> by_architecture;
  // By EfficiencyClass: what a node of an architecture no node taught takes.
  std::map<std::string, std::map<std::string, double>> by_class;
  // By EfficiencyClass of power-capped cards, per math rate: the cap of the
  // class's power-bound nodes (PowerCappedEfficiency), where it has any.
  std::map<std::string, std::map<std::string, double>> power_cap_by_class;
  std::map<std::string, double> global;

  friend bool operator==(const EfficiencyTable&, const EfficiencyTable&) = default;
};

// Geometric means of measured/spec per architecture, per efficiency class
// and overall, over the nodes that have both (other nodes are ignored), and
// the power cap of each class of power-capped cards (PowerClass "<=100W"):
// the geometric mean of efficiency ÷ (board watts ÷ spec rate)^(1/3) over its
// nodes that sustain less of a math rate than the global efficiency (the
// power-bound ones; a class with none has no cap).
EfficiencyTable LearnEfficiencies(absl::Span<const models::Node* const> nodes);

// How far spec × learned efficiency misses a GPU's real rate when that GPU
// is left out of the learning: per rate key, the spread (1.4826 × median
// absolute value, a robust standard deviation) of log(spec × efficiency
// without the node / measured) over the nodes that have both (absent with
// fewer than two). The spread of a spec-only GPU's
// rates, which its prediction intervals must carry. Beside each key,
// DistanceSpreadKey(key, kind) holds the same over the nodes that no other
// node shares an architecture, vendor or power class with (DistanceGroup):
// left out, each was as far from the rest as a target new in that kind is
// from the fit (absent with fewer than two such nodes); and
// SeenArchitectureSpreadKey(key) the same over the nodes that did share
// their architecture with another node with rates: left out, each was as far
// as a spec-sheet GPU of an architecture the fit learned is.
std::map<std::string, double> LeaveOneOutRateSpread(absl::Span<const models::Node* const> nodes);

// How a target differs from the GPUs a fit learned from, in the order of
// their reach: a new vendor is a new architecture too.
enum class DistanceKind { kArchitecture, kVendor, kPowerClass };
// "architecture", "vendor", "power class".
absl::string_view DistanceKindName(DistanceKind kind);
// "fp32/new-architecture", "memory/new-vendor", "fp32/new-power-class":
// LeaveOneOutRateSpread's key for a rate of a GPU new in `kind`.
std::string DistanceSpreadKey(absl::string_view rate_key, DistanceKind kind);
// "fp32/seen-architecture": LeaveOneOutRateSpread's key for a rate of a GPU
// whose architecture the fit learned.
std::string SeenArchitectureSpreadKey(absl::string_view rate_key);
// The group a GPU belongs to in `kind`: its architecture, its vendor (empty
// when unknown), or PowerClass(tdp_watts).
std::string DistanceGroup(const models::GpuSpec& gpu, DistanceKind kind);

// The board-power class whose GPUs sustain similar fractions of their spec
// rates: "<=100W" (low-profile inference cards, power-capped below their
// boost clock), "100-450W" (PCIe and early SXM boards), ">450W" (SXM5, OAM
// and newer); empty when the board power is unknown.
std::string PowerClass(double tdp_watts);

// The class whose efficiencies a GPU of an unseen architecture takes: its
// vendor and power class ("NVIDIA <=100W"); empty when either is unknown.
std::string EfficiencyClass(const models::GpuSpec& gpu);

// A board held to its power budget runs below its boost clock: dynamic power
// grows about as the cube of the clock (voltage follows frequency), so the
// share of its spec rate it sustains grows as the cube root of the watts it
// has per spec TFLOP/s. The efficiency of a spec rate under power cap `cap`:
// cap × (tdp_watts / spec)^(1/3), at most `ceiling`.
double PowerCappedEfficiency(double cap, double tdp_watts, double spec, double ceiling);

// The rate `precision` runs at on `node`, as EffectiveRates::FlopsPerSecond
// chooses it (a rate the GPU lacks falls back to fp32): its key ("fp32",
// "bf16", "fp8", ...), and whether the fit has seen it: measured on `node`,
// or learned by `efficiencies` from GPUs that measured it. A rate priced by
// another's efficiency (FP8 and INT8 by bf16's) is not seen; `borrowed_from`
// names the other.
struct RatePath {
  std::string key;
  bool seen = false;
  std::string borrowed_from;
};
RatePath PrecisionRatePath(const models::Node& node, const EfficiencyTable& efficiencies,
                           models::Precision precision);

struct EffectiveRates {
  double flops_per_s[models::kPrecisionCount] = {};  // indexed by models::Precision
  double memory_bytes_per_s = 0;
  double launch_latency_s = 0;
  double h2d_bytes_per_s = 0;
  double dispatch_ops_per_s = 0;  // the framework's host-side op rate
  int sm_count = 1;
  RateSource source = RateSource::kMeasured;  // worst of the rates above

  // The math rate for `precision`: amp precisions map to their tensor-core
  // 16-bit rate, tf32 to tf32; a rate the GPU lacks falls back to fp32.
  double FlopsPerSecond(models::Precision precision) const;
};

// InvalidArgument when the node's spec and measurements leave no positive
// fp32 rate or memory bandwidth.
absl::StatusOr<EffectiveRates> ResolveRates(const models::Node& node,
                                            const EfficiencyTable& efficiencies);

// `rates` with the host measured during one run (models::RunConditions:
// launch latency, copy bandwidth, dispatch rate) in place of the node's:
// the host a profile actually ran with, where it was recorded.
EffectiveRates WithRunConditions(const EffectiveRates& rates,
                                 const models::RunConditions& conditions);

}  // namespace perfcast::predictor

#endif  // PERFCAST_PREDICTOR_RATES_H_
