// One model's predictions for one node, with everything that does not
// depend on the workload worked out once.
//
// PredictDescribed works from names: each call resolves the node's rates
// (a copy of the node with the model's profile rates laid over it), finds
// each level-1 and level-2 model's features in the compiled tables by name,
// builds the "level1/gemm:compute_ms" strings a prediction lists and works
// out every model's interval factors for the node. None of that depends on
// the workload, and a server prices many workloads with one model on a few
// nodes: a PricingPlan does it once per model and node, so that a
// prediction is arithmetic on the workload's operations.
//
// Predict answers what PredictDescribed answers, field for field and bit
// for bit, errors included (pricing_plan_test compares them over many
// workloads, nodes and models); PredictDescribed stays the reference and
// what fitting and evaluation use.
//
// Example:
//   const PricingPlan plan(model, node);                       // per model and node
//   absl::StatusOr<Prediction> p = plan.Predict(descriptor);    // per workload
//
// PredictPlanned answers the same without copying a string: its lists point
// at the plan's own labels (see PlannedPrediction), for a caller that writes
// the answer out itself and would otherwise copy every label twice.
//
// Thread-safe: immutable once built.
#ifndef PERFCAST_PREDICTOR_PRICING_PLAN_H_
#define PERFCAST_PREDICTOR_PRICING_PLAN_H_

#include <array>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
#include "absl/status/statusor.h"
#include "models/descriptor.h"
#include "models/hardware.h"
#include "predictor/features.h"
#include "predictor/memory.h"
#include "predictor/model.h"
#include "predictor/prediction_parts.h"
#include "predictor/predictor.h"
#include "predictor/rates.h"

namespace perfcast::predictor {

// A Prediction whose strings are references into the PricingPlan that made
// it (its class keys and feature labels): valid while that plan lives.
// ToPrediction() is the Prediction, field for field and bit for bit.
struct PlannedPrediction {
  // Every field but breakdown_ms, features_used, extrapolated and
  // uncalibrated_classes, which stay empty.
  Prediction numbers;
  // breakdown_ms's entries in its order (by class key).
  absl::InlinedVector<std::pair<const std::string*, double>, 12> breakdown;
  absl::InlinedVector<const std::string*, 24> features_used;
  absl::InlinedVector<const std::string*, 24> extrapolated;
  absl::InlinedVector<const std::string*, 12> uncalibrated_classes;

  Prediction ToPrediction() const;
  // Empty, as constructed, keeping the lists' memory.
  void Clear();
};

// A workload's operations with what pricing reads of them worked out once:
// each call's work inputs (OperationWorkInputs: a walk of the shape and a
// GEMM's tiling), its error regime (LoadRegime), and attention records split
// into their parts (SplitAttention), for models that price attention so.
// None of it depends on the model or the node, and a descriptor is a
// function of the workload's fields alone: a server prepares each distinct
// workload once and prices it on any node with any model, and a price then
// reads one flat array instead of every operation's shape map.
//
// Refers to `descriptor`, which must outlive it.
class PreparedWorkload {
 public:
  explicit PreparedWorkload(const models::WorkloadDescriptor& descriptor);

  const models::WorkloadDescriptor& descriptor() const { return *descriptor_; }
  // MemoryInputsOf(descriptor()).
  const MemoryInputs& memory_inputs() const { return memory_; }
  // WorkloadInputValues(descriptor(), rates), from the prepared operations.
  WorkloadInputArray InputValues(const EffectiveRates& rates) const;

 private:
  friend class PricingPlan;
  // One operation as level 1 prices it. What a price reads is here, so that
  // it need not touch the descriptor's records (names, shape maps) at all.
  struct Operation {
    std::array<double, kOperationInputCount> inputs;  // the node's slots 0
    double count;                 // calls per iteration
    models::OpClass op_class;
    models::Precision precision;
    int regime;                   // RegimeIndex(LoadRegime(record))
    bool ends_record;             // the last part of its descriptor record
    // An earlier operation of the same list with the same class, precision,
    // regime and inputs (bit for bit), whose call this one costs as much as
    // on any node: a price works each distinct call out once (a model's
    // repeated layers). -1 when there is none.
    int same_as = -1;

    // The record as RooflineCallMs reads it: its class, precision and work.
    models::Operation Work() const;
  };
  // Sets each operation's same_as.
  static void LinkRepeats(std::vector<Operation>& operations);
  const models::WorkloadDescriptor* descriptor_;
  MemoryInputs memory_;
  WorkloadInputArray own_inputs_;  // WorkloadOwnInputs
  std::vector<Operation> whole_;  // one per descriptor record
  std::vector<Operation> split_;  // attention records as their parts; empty without attention
};

class PricingPlan {
 public:
  // `model` must outlive the plan; what the plan needs of `node` is copied.
  PricingPlan(const PredictorModel& model, const models::Node& node);
  PricingPlan(const PricingPlan&) = delete;
  PricingPlan& operator=(const PricingPlan&) = delete;

  // PredictDescribed(model, descriptor, node), with its errors.
  absl::StatusOr<Prediction> Predict(const models::WorkloadDescriptor& descriptor) const;
  // The same from a workload prepared once (what a server prices again and again).
  absl::StatusOr<Prediction> Predict(const PreparedWorkload& workload) const;
  // Predict's answer with its strings in this plan (see PlannedPrediction).
  absl::StatusOr<PlannedPrediction> PredictPlanned(
      const models::WorkloadDescriptor& descriptor) const;
  // The same from a workload prepared once (what a server prices again and again).
  absl::StatusOr<PlannedPrediction> PredictPlanned(const PreparedWorkload& workload) const;
  // The same written into `out` (cleared first), for a caller that keeps
  // the answer in place instead of moving it out of a StatusOr.
  absl::Status PredictPlanned(const PreparedWorkload& workload, PlannedPrediction* out) const;

 private:
  // models::OpClass's values, kGemm .. kSoftmax.
  static constexpr int kOpClasses = static_cast<int>(models::OpClass::kSoftmax) + 1;

  // One operation class: its level-1 model, or none (then its operations
  // are priced at their roofline time and the class listed as uncalibrated).
  struct Level1 {
    const FittedModel* model = nullptr;
    std::string key;                   // OpClassKey: breakdown and uncalibrated lists
    std::vector<int> slots;            // model->features in CompiledOperationTable()
    // CompiledOperationTable() cut down to what model->features need.
    std::optional<CompiledFeatureTable> table;
    // Per feature: its label ("level1/gemm:compute_ms") in level1_labels_.
    // Features that share a label share an index, so that a prediction
    // lists each label once, as AddOnce would.
    std::vector<int> label_ids;
    int first_flag = 0;                // its features' first extrapolation flag
    internal::BandFactors band[2][3];  // [memory-bound][RegimeIndex]
  };
  // One level-2 model.
  struct Level2 {
    const FittedModel* model = nullptr;
    bool uses_level1 = false;          // level1_ms among its features
    bool uses_gpu = false;             // level1_gpu_ms among them
    std::vector<int> slots;            // in CompiledWorkloadTable(uses_level1 || uses_gpu)
    std::optional<CompiledFeatureTable> table;  // that table cut down to its features
    std::vector<std::string> labels;
    // No label is a level-1 label ("level2/..." against "level1/..."): a
    // prediction then looks for one only among those level 2 listed.
    bool labels_apart = false;
    internal::BandFactors band[2];     // [memory-bound]
  };
  // A calibration of this node's GPU for one family and phase, with the
  // label a calibrated answer lists (CalibrationLabel).
  struct Calibrated {
    const Calibration* calibration = nullptr;
    std::string label;
  };
  // One phase's level-2 models: the global one and the families' own; the
  // calibrations of this node's GPU by family.
  struct Phase {
    std::optional<Level2> global;
    absl::flat_hash_map<std::string, Level2> by_family;
    absl::flat_hash_map<std::string, Calibrated> calibrations;
  };
  // What one prediction has noted so far: which classes' features it has
  // listed and which features it has found extrapolated.
  struct Notes;

  Level2 MakeLevel2(const FittedModel& fitted, const internal::Target& target) const;
  // The level-1 sum over the descriptor's operations on `rates`, noting
  // breakdown, band, features and classes in `prediction` when given.
  absl::StatusOr<double> Level1Sum(const PreparedWorkload& workload,
                                   const EffectiveRates& rates,
                                   PlannedPrediction* prediction) const;
  // One call of an operation: its time, and its band when noting.
  struct CallPrice {
    double ms = 0, lo = 0, hi = 0;
  };
  // One call of `prepared`, noting its class's features, their
  // extrapolation and an uncalibrated class in `notes` when `noting`.
  absl::StatusOr<CallPrice> PriceCall(const PreparedWorkload::Operation& prepared,
                                      const EffectiveRates& rates, bool noting,
                                      Notes& notes) const;
  // `host_ms`: what the model's host terms add (internal::HostTermsMs).
  absl::StatusOr<double> ApplyLevel2(const Level2& level2, const WorkloadInputArray& inputs,
                                     PlannedPrediction& prediction, double& host_ms) const;
  // internal::ScaleBreakdown on `prediction`'s breakdown.
  void ScaleBreakdown(double level1_ms, double host_ms, PlannedPrediction& prediction) const;

  const PredictorModel& model_;
  std::string node_name_;
  absl::StatusOr<EffectiveRates> rates_;
  EffectiveRates launch_free_;  // rates_ without launch costs (LaunchFree)
  bool split_attention_ = false;
  std::array<Level1, kOpClasses> level1_;
  std::array<int, kOpClasses> by_key_;  // class indices in the order of their keys
  int level1_flags_ = 0;  // level-1 features over all classes
  // Every level-1 model's labels, each once: a prediction notes which it
  // lists by index and points at them.
  std::vector<std::string> level1_labels_;
  Phase phases_[2];       // by models::Phase
};

}  // namespace perfcast::predictor

#endif  // PERFCAST_PREDICTOR_PRICING_PLAN_H_
