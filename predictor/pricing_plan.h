// How a fitted model prices a workload: the one implementation of a
// prediction, for one GPU, a batch, a layout's micro-batch, an evaluation
// and a recommendation alike.
//
// What does not depend on the workload is worked out once per model and
// node: the node's rates (the node with the model's profile rates laid over
// it), each level-1 and level-2 model's features in the compiled tables,
// the "level1/gemm:compute_ms" labels a prediction lists and every model's
// interval factors for the node. A server prices many workloads with one
// model on a few nodes, so a prediction is arithmetic on the workload's
// operations.
//
// Example:
//   const PricingPlan plan(model, node);                       // per model and node
//   absl::StatusOr<Prediction> p = plan.Predict(descriptor);    // per workload
//
// PredictPlanned answers the same without copying a string: its lists point
// at the plan's own labels (see PlannedPrediction), for a caller that writes
// the answer out itself and would otherwise copy every label twice.
// Level1Plan is the level-1 half alone, at any rates: what fitting regresses
// level 2 on.
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
#include "predictor/distance.h"
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
  friend class Level1Plan;
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

// A model's level 1, compiled once: each operation class's model, its
// features' slots in CompiledOperationTable() and their labels. It prices a
// workload's operations at any rates, so that fitting's level-1 sums (at each
// run's own rates) and a PricingPlan's are one computation.
//
// Refers to `model`'s level-1 models, which must outlive it unchanged.
class Level1Plan {
 public:
  explicit Level1Plan(const PredictorModel& model);
  Level1Plan(const Level1Plan&) = delete;
  Level1Plan& operator=(const Level1Plan&) = delete;

  // The level-1 sum of `workload` at `rates`: each operation's calls priced
  // by its class's level-1 model, or at their roofline time for a class
  // without one; attention records as their GEMMs and softmax where the
  // model has GEMMs but no attention class (internal::SplitAttention).
  // Errors: InvalidArgument for an operation of an unknown class;
  // FailedPrecondition when a model answers a non-finite time.
  absl::StatusOr<double> Sum(const PreparedWorkload& workload, const EffectiveRates& rates) const;
  // Sum's parts per descriptor record (its count × one call, a split
  // record's parts added), in order.
  absl::StatusOr<std::vector<double>> RecordTimes(const PreparedWorkload& workload,
                                                  const EffectiveRates& rates) const;

 private:
  friend class PricingPlan;
  // models::OpClass's values, kGemm .. kSoftmax.
  static constexpr int kOpClasses = static_cast<int>(models::OpClass::kSoftmax) + 1;

  // One operation class: its level-1 model, or none (then its operations
  // are priced at their roofline time and the class listed as uncalibrated).
  struct Class {
    const FittedModel* model = nullptr;
    std::string key;                   // OpClassKey: breakdown and uncalibrated lists
    std::vector<int> slots;            // model->features in CompiledOperationTable()
    // CompiledOperationTable() cut down to what model->features need.
    std::optional<CompiledFeatureTable> table;
    // Per feature: its label ("level1/gemm:compute_ms") in labels_.
    // Features that share a label share an index, so that a prediction
    // lists each label once.
    std::vector<int> label_ids;
    int first_flag = 0;                // its features' first extrapolation flag
  };
  // A node's interval factors per class: [class][memory-bound][RegimeIndex].
  using Bands = std::array<std::array<std::array<internal::BandFactors, 3>, 2>, kOpClasses>;
  // What one prediction has noted so far: which classes' features it has
  // listed and which features it has found extrapolated.
  struct Notes;
  // One call of an operation: its time, and its band when noting.
  struct CallPrice {
    double ms = 0, lo = 0, hi = 0;
  };

  // One call of `prepared`; with `bands`, its band, and its class's
  // features, their extrapolation and an uncalibrated class noted in `notes`.
  absl::StatusOr<CallPrice> PriceCall(const PreparedWorkload::Operation& prepared,
                                      const EffectiveRates& rates, const Bands* bands,
                                      Notes& notes) const;
  // The level-1 sum; with `bands` and `prediction`, noting breakdown, band,
  // features and classes in it; each record's part into `records` when given.
  absl::StatusOr<double> Sum(const PreparedWorkload& workload, const EffectiveRates& rates,
                             const Bands* bands, PlannedPrediction* prediction,
                             std::vector<double>* records) const;

  bool split_attention_ = false;
  std::array<Class, kOpClasses> classes_;
  std::array<int, kOpClasses> by_key_;  // class indices in the order of their keys
  int flags_ = 0;  // level-1 features over all classes
  // Every level-1 model's labels, each once: a prediction notes which it
  // lists by index and points at them.
  std::vector<std::string> labels_;
};

class PricingPlan {
 public:
  // `model` must outlive the plan; what the plan needs of `node` is copied.
  PricingPlan(const PredictorModel& model, const models::Node& node);
  PricingPlan(const PricingPlan&) = delete;
  PricingPlan& operator=(const PricingPlan&) = delete;

  // Predicts one iteration of `descriptor` on the node (an operation
  // workload: one call, by its class's level-1 model). A whole step is never
  // answered below its roofline time on the node (kLevel1Fallback). Errors:
  // InvalidArgument when the node lacks usable rates; FailedPrecondition when
  // the model has nothing for this workload (no level-2 model for its phase
  // and no level-1 models, or no level-1 model for an operation workload's
  // class) or predicts a non-positive or non-finite time.
  // `loop`: the loop that runs the step (python_loop.h); a model workload in
  // a Python loop is the C++ step composed with the node's Python host work
  // (before a calibration, which corrects the composed answer).
  absl::StatusOr<Prediction> Predict(const models::WorkloadDescriptor& descriptor,
                                     models::Loop loop = models::Loop::kCpp) const;
  // The same from a workload prepared once (what a server prices again and again).
  absl::StatusOr<Prediction> Predict(const PreparedWorkload& workload,
                                     models::Loop loop = models::Loop::kCpp) const;
  // Predict's answer with its strings in this plan (see PlannedPrediction).
  absl::StatusOr<PlannedPrediction> PredictPlanned(
      const models::WorkloadDescriptor& descriptor, models::Loop loop = models::Loop::kCpp) const;
  // The same from a workload prepared once (what a server prices again and again).
  absl::StatusOr<PlannedPrediction> PredictPlanned(const PreparedWorkload& workload,
                                                   models::Loop loop = models::Loop::kCpp) const;
  // The same written into `out` (cleared first), for a caller that keeps
  // the answer in place instead of moving it out of a StatusOr.
  absl::Status PredictPlanned(const PreparedWorkload& workload, PlannedPrediction* out,
                              models::Loop loop = models::Loop::kCpp) const;
  // The node's Python host cost per operation (HostCostOf).
  const PythonHostCost& python_host_cost() const { return python_cost_; }

 private:
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
  // calibrations of this node's GPU by family, and those of its agent runs
  // by "family/precision".
  struct Phase {
    std::optional<Level2> global;
    absl::flat_hash_map<std::string, Level2> by_family;
    absl::flat_hash_map<std::string, Calibrated> calibrations;
    absl::flat_hash_map<std::string, Calibrated> measured;
  };

  // The C++ step of `workload`: level 1, level 2, the implementation's GPU
  // work and the agent's runs' corrections. `level1_ms`: the operations'
  // level-1 sum; `host_ms`: what level 2's host terms add.
  absl::Status PriceStep(const PreparedWorkload& workload, PlannedPrediction& planned,
                         double& level1_ms, double& host_ms) const;
  // Whether a strict-fp32 `descriptor` with convolutions is priced as its
  // fp32 twin plus its convolutions' math at the FP32 rather than the TF32
  // rate: wherever the agent measured neither its family and phase on this
  // GPU in strict-fp32 nor the workload itself. The two modes run the same
  // kernels but cuDNN's, so fp32's runs (where there are any) say what the
  // rest costs, and level 1, whose convolution model learned from
  // tensor-core runs, is never asked for FP32 convolutions: its wave term
  // at the FP32 rate prices a weight gradient's few tiles several times over.
  bool PricesStrictFromFp32(const models::WorkloadDescriptor& descriptor) const;
  // Adds `descriptor`'s strict-fp32 convolutions' extra math time (FLOPs at
  // the FP32 rate less at the TF32 rate) to the answer, its level-1 sum and
  // the convolutions' breakdown, and to its band with level 1's band for it.
  void AddStrictConvolutions(const models::WorkloadDescriptor& descriptor,
                             PlannedPrediction& planned, double& level1_ms) const;
  // `spread`: the rate spread of compute-bound [0] and memory-bound [1]
  // work on the node (DistanceSpread).
  Level2 MakeLevel2(const FittedModel& fitted, const internal::Target& target,
                    const double spread[2]) const;
  // `host_ms`: what the model's host terms add (internal::HostTermsMs).
  absl::StatusOr<double> ApplyLevel2(const Level2& level2, const WorkloadInputArray& inputs,
                                     PlannedPrediction& prediction, double& host_ms) const;
  // internal::SetBreakdownScale, then the breakdown scaled and the host's
  // share added.
  void ScaleBreakdown(double level1_ms, double host_ms, PlannedPrediction& prediction) const;

  const PredictorModel& model_;
  std::string node_name_;
  PythonHostCost python_cost_;  // HostCostOf(node, FittedPythonLoopTerms())
  absl::StatusOr<EffectiveRates> rates_;
  EffectiveRates launch_free_;  // rates_ without launch costs (LaunchFree)
  Level1Plan level1_;
  Level1Plan::Bands bands_;     // level1_'s interval factors on this node
  Phase phases_[2];             // by models::Phase
  // The calibrations of this node's GPU by measured workload (its
  // WorkloadSpec::Key, precision as CalibrationPrecision names it).
  absl::flat_hash_map<std::string, Calibrated> runs_;
  // By models::Precision: the node's distance from the training GPUs with
  // that precision's path, and the spread a new path adds to the band.
  std::array<Distance, models::kPrecisionCount> distances_;
  std::array<double, models::kPrecisionCount> precision_spread_ = {};
};

// Level 1 alone, per operation record: the ms per iteration (count × one
// call) of each of `descriptor.operations`, in order, as a PricingPlan on
// `node` sums them (Level1Plan::RecordTimes at the node's rates).
// InvalidArgument when the node lacks usable rates; otherwise
// Level1Plan::Sum's errors.
absl::StatusOr<std::vector<double>> PredictOperationTimes(
    const PredictorModel& model, const models::WorkloadDescriptor& descriptor,
    const models::Node& node);

}  // namespace perfcast::predictor

#endif  // PERFCAST_PREDICTOR_PRICING_PLAN_H_
