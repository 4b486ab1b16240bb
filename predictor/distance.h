// How far a target GPU is from the GPUs a model learned from: its
// architecture, vendor and board-power class, and the rate its precision
// runs at, each seen in training or new. A prediction carries it, and its
// interval widens with it (DistanceSpread).
//
// Thread-safe: plain values and pure functions.
#ifndef PERFCAST_PREDICTOR_DISTANCE_H_
#define PERFCAST_PREDICTOR_DISTANCE_H_

#include <string>
#include <vector>

#include "models/hardware.h"
#include "models/workload.h"
#include "predictor/model.h"

namespace perfcast::predictor {

// kUnknown: the target does not say (no vendor, no board power) or the model
// did not record its training GPUs' (a model file older than distances).
enum class Seen { kSeen, kNew, kUnknown };

struct Distance {
  std::string architecture;
  Seen architecture_seen = Seen::kUnknown;
  std::string vendor;
  Seen vendor_seen = Seen::kUnknown;
  std::string power_class;  // PowerClass(tdp_watts)
  Seen power_class_seen = Seen::kUnknown;
  // The rate key the requested precision runs at on the target ("fp32",
  // "bf16", "fp8", ...): seen when measured on the target or learned from
  // training GPUs that measured it; new when borrowed from another rate
  // (FP8 and INT8 are never measured) or never measured in training.
  std::string precision_path;
  Seen precision_path_seen = Seen::kUnknown;
  // New components for which the training GPUs held no example to learn a
  // spread from (DistanceSpread, PrecisionPathSpread): "architecture",
  // "vendor", "power class", "precision path".
  std::vector<std::string> unlearned;
  // What widened those: "the new-architecture spread stands in", "the
  // pooled spread stands in" (no architecture was alone in training) or "no
  // spread was learned to widen by" (one training GPU).
  std::string stand_in;

  // One line for people: "new architecture (blackwell), vendor seen
  // (NVIDIA), power class seen (>450W), new precision path (fp8 as bf16);
  // no training example for the new precision path: the new-architecture
  // spread stands in".
  std::string Summary() const;

  friend bool operator==(const Distance&, const Distance&) = default;
};

// The hardware part of `node`'s distance from `model`'s training GPUs
// (architecture, vendor, power class). `node` carries its rates as
// PricingPlan resolves them (WithProfileRates); spreads are not yet looked
// up (`unlearned` is set by DistanceSpread).
Distance HardwareDistance(const PredictorModel& model, const models::Node& node);

// `distance` with the precision path of `precision` on `node` filled in.
void SetPrecisionPath(const PredictorModel& model, const models::Node& node,
                      models::Precision precision, Distance& distance);

// The log-normal spread of the binding rate ("fp32" for compute-bound work,
// "memory" else) for a target at `distance`. A target whose architecture,
// vendor and power class are all seen takes the spread measured on nodes
// that a sibling of their architecture taught (SeenArchitectureSpreadKey),
// where one was learned, else the pooled leave-one-GPU-out spread. Otherwise
// the largest of those two and the leave-one-group-out spread of each
// hardware component that is new (rates.h, DistanceSpreadKey). A new
// component without a learned spread takes the new-architecture one (a new
// vendor or power class is at least as far as a new architecture of a seen
// one) and is added to distance.unlearned. A farther target never takes
// less than a seen one: an interval only widens with distance.
double DistanceSpread(const PredictorModel& model, bool memory_bound, Distance& distance);

// The extra log-normal spread a new precision path adds (in quadrature) to
// compute-bound work: no training GPU measured that path, so none can be
// learned; the new-architecture compute spread (else the pooled one) stands
// for how far one rate's efficiency is from another's. 0 when the path is
// seen or unknown. Adds "precision path" to distance.unlearned when it
// widens.
double PrecisionPathSpread(const PredictorModel& model, Distance& distance);

}  // namespace perfcast::predictor

#endif  // PERFCAST_PREDICTOR_DISTANCE_H_
