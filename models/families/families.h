// The family registry behind descriptor.h: each family contributes its
// documentation and parameters, its own constraints beyond the parameter
// ranges, and the walk over its architecture. Internal to perfcast_models.
#ifndef PERFCAST_MODELS_FAMILIES_FAMILIES_H_
#define PERFCAST_MODELS_FAMILIES_FAMILIES_H_

#include <vector>

#include "absl/status/status.h"
#include "models/descriptor.h"
#include "models/workload.h"

namespace perfcast::models::families {

struct FamilyDef {
  FamilyInfo info;
  // Constraints between parameters, on a spec whose parameters are known,
  // in range and defaulted. InvalidArgument names the parameter.
  absl::Status (*check)(const WorkloadSpec& spec) = nullptr;
  // Describes a normalised spec.
  WorkloadDescriptor (*describe)(const WorkloadSpec& spec) = nullptr;
  // Normalisation of what the family ignores, so that equal work has equal
  // keys: batch size forced to 1, precision to fp32, phase to `phase`.
  bool uses_batch = true;
  bool uses_precision = true;
  bool fixed_phase = false;
  Phase phase = Phase::kTrain;
};

FamilyDef LstmFamily();
FamilyDef CnnFamily();
FamilyDef StgcnFamily();
FamilyDef ResNetFamily();
FamilyDef TransformerFamily();
FamilyDef DlrmFamily();
FamilyDef DecoderFamily();
FamilyDef BertFamily();
FamilyDef VitFamily();
FamilyDef ResNetImageNetFamily();
// gemm, conv2d, lstm_cell, attention, sdpa, rmsnorm, swiglu,
// cross_entropy, elementwise, layernorm, softmax, embedding, optimizer, h2d.
std::vector<FamilyDef> OperationFamilies();

// For checks that need none.
inline absl::Status NoConstraints(const WorkloadSpec&) { return absl::OkStatus(); }

}  // namespace perfcast::models::families

#endif  // PERFCAST_MODELS_FAMILIES_FAMILIES_H_
