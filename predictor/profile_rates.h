// Hardware rates read off a node's own operation profiles.
//
// The agent measures a node's math rate and memory bandwidth with
// micro-benchmarks (models::MeasuredRates). Profiles imported from elsewhere
// (public kernel measurements, another tool's CSV) come without that
// fingerprint, but their large GEMMs and element-wise kernels measure the
// same thing: the sustained rate of a matmul too big for launch and tail
// effects, and the bandwidth of a streaming kernel. These rates then play the
// part of measured ones, and spec/measured efficiencies per architecture are
// learned from them.
//
// Only the profiles passed in are read: a fit over training GPUs derives no
// rate of a held-out GPU. The host's dispatch rate is read off every profile
// kind: each carries the agent's reading taken beside it.
//
// Thread-safe: pure functions.
#ifndef PERFCAST_PREDICTOR_PROFILE_RATES_H_
#define PERFCAST_PREDICTOR_PROFILE_RATES_H_

#include <map>
#include <string>

#include "absl/types/span.h"
#include "models/hardware.h"
#include "predictor/dataset.h"

namespace perfcast::predictor {

// Per node name, the rates its operation profiles show, keyed as
// EfficiencyTable keys ("fp32", "tf32", "fp16", "bf16", "fp64": TFLOP/s;
// "memory": GB/s; "dispatch": ops/s). A math rate is the 90th percentile of
// the achieved rate over at least kMinRateProfiles GEMM profiles of at least
// 10 GFLOP in that precision; the bandwidth likewise over element-wise
// profiles of at least 100 MB. A node whose agent measured a rate keeps it:
// those keys are absent. "dispatch" is the median of the host's dispatch
// rate recorded with each profile (RunConditions) over at least
// kMinRateProfiles profiles, and replaces the node's own: the node holds one
// reading taken when a run started (the last file imported wins), the fit
// learned from every profile's own reading, and a host's reading moves by
// more between minutes than hosts differ (data/README.md, "The host's
// dispatch rate").
using ProfileRates = std::map<std::string, std::map<std::string, double>>;
inline constexpr int kMinRateProfiles = 5;
ProfileRates RatesFromProfiles(absl::Span<const DescribedProfile> profiles,
                               const std::map<std::string, models::Node>& nodes);

// `node` with every rate it lacks filled from `rates` (if it has an entry),
// and its dispatch rate replaced by its profiles' typical one.
models::Node WithProfileRates(const models::Node& node, const ProfileRates& rates);

}  // namespace perfcast::predictor

#endif  // PERFCAST_PREDICTOR_PROFILE_RATES_H_
