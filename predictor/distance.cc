#include "predictor/distance.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "predictor/rates.h"

namespace perfcast::predictor {
namespace {

Seen SeenIn(const std::vector<std::string>& training, const std::string& value) {
  if (training.empty() || value.empty()) return Seen::kUnknown;
  return std::find(training.begin(), training.end(), value) != training.end() ? Seen::kSeen
                                                                               : Seen::kNew;
}

// "new architecture (blackwell)", "vendor seen (NVIDIA)", "power class unknown".
std::string Part(absl::string_view name, Seen seen, const std::string& value) {
  std::string text;
  switch (seen) {
    case Seen::kSeen:
      text = absl::StrCat(name, " seen");
      break;
    case Seen::kNew:
      text = absl::StrCat("new ", name);
      break;
    case Seen::kUnknown:
      text = absl::StrCat(name, " unknown");
      break;
  }
  if (!value.empty()) absl::StrAppend(&text, " (", value, ")");
  return text;
}

double SpreadOf(const PredictorModel& model, const std::string& key) {
  auto it = model.rate_spread.find(key);
  return it == model.rate_spread.end() ? 0 : it->second;
}

// Returns the spread that stands in for `component`'s, which no training
// GPU could teach: the new-architecture one, else the pooled one.
double NoteUnlearned(const PredictorModel& model, const std::string& key,
                     absl::string_view component, Distance& distance) {
  const double new_architecture =
      SpreadOf(model, DistanceSpreadKey(key, DistanceKind::kArchitecture));
  const double pooled = SpreadOf(model, key);
  distance.stand_in = new_architecture > 0 ? "the new-architecture spread stands in"
                      : pooled > 0         ? "the pooled spread stands in"
                                           : "no spread was learned to widen by";
  if (std::find(distance.unlearned.begin(), distance.unlearned.end(), component) ==
      distance.unlearned.end()) {
    distance.unlearned.emplace_back(component);
  }
  return new_architecture > 0 ? new_architecture : pooled;
}

}  // namespace

std::string Distance::Summary() const {
  std::string line = absl::StrJoin(
      {Part("architecture", architecture_seen, architecture),
       Part("vendor", vendor_seen, vendor), Part("power class", power_class_seen, power_class),
       Part("precision path", precision_path_seen, precision_path)},
      ", ");
  if (!unlearned.empty()) {
    absl::StrAppend(&line, "; no training example for the new ", absl::StrJoin(unlearned, ", "),
                    ": ", stand_in);
  }
  return line;
}

Distance HardwareDistance(const PredictorModel& model, const models::Node& node) {
  Distance distance;
  distance.architecture = node.gpu.architecture;
  if (!model.efficiencies.by_architecture.empty() && !node.gpu.architecture.empty()) {
    distance.architecture_seen = model.efficiencies.by_architecture.contains(node.gpu.architecture)
                                     ? Seen::kSeen
                                     : Seen::kNew;
  }
  distance.vendor = node.gpu.vendor;
  distance.vendor_seen = SeenIn(model.training_vendors, node.gpu.vendor);
  distance.power_class = PowerClass(node.gpu.tdp_watts);
  distance.power_class_seen = SeenIn(model.training_power_classes, distance.power_class);
  return distance;
}

void SetPrecisionPath(const PredictorModel& model, const models::Node& node,
                      models::Precision precision, Distance& distance) {
  const RatePath path = PrecisionRatePath(node, model.efficiencies, precision);
  distance.precision_path = path.borrowed_from.empty()
                                ? path.key
                                : absl::StrCat(path.key, " as ", path.borrowed_from);
  distance.precision_path_seen = path.seen ? Seen::kSeen : Seen::kNew;
}

double DistanceSpread(const PredictorModel& model, bool memory_bound, Distance& distance) {
  const std::string key = memory_bound ? "memory" : "fp32";
  // A seen architecture's efficiency was learned on a sibling: its spread is
  // the one measured on siblings (the pooled one mostly measures GPUs alone
  // in their architecture), where there is one. Farther targets never take
  // less than either.
  const double seen = SpreadOf(model, SeenArchitectureSpreadKey(key));
  double spread = SpreadOf(model, key);
  if (seen > 0 && distance.architecture_seen == Seen::kSeen &&
      distance.vendor_seen != Seen::kNew && distance.power_class_seen != Seen::kNew) {
    return seen;
  }
  spread = std::max(spread, seen);
  const std::pair<DistanceKind, Seen> components[] = {
      {DistanceKind::kArchitecture, distance.architecture_seen},
      {DistanceKind::kVendor, distance.vendor_seen},
      {DistanceKind::kPowerClass, distance.power_class_seen},
  };
  for (const auto& [kind, seen] : components) {
    if (seen != Seen::kNew) continue;
    auto learned = model.rate_spread.find(DistanceSpreadKey(key, kind));
    if (learned != model.rate_spread.end()) {
      spread = std::max(spread, learned->second);
    } else {
      spread = std::max(spread, NoteUnlearned(model, key, DistanceKindName(kind), distance));
    }
  }
  return spread;
}

double PrecisionPathSpread(const PredictorModel& model, Distance& distance) {
  if (distance.precision_path_seen != Seen::kNew) return 0;
  return NoteUnlearned(model, "fp32", "precision path", distance);
}

}  // namespace perfcast::predictor
