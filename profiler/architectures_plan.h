// The built-in plan "architectures": the models users train (GPT-2 small and
// medium, a 1.1B Llama-style decoder (TinyLlama's shape), BERT-base and -large, ViT-B/16 at two
// depths, torchvision ResNet-18/50/101) and the operations their shapes
// produce (vocabulary GEMMs, fused attention, RMSNorm, SwiGLU, vocabulary
// cross-entropy, large embeddings, Adam over 1e8-1e9 parameters). Internal
// to perfcast_plan: callers use BuiltinPlan("architectures") (plan.h).
#ifndef PERFCAST_PROFILER_ARCHITECTURES_PLAN_H_
#define PERFCAST_PROFILER_ARCHITECTURES_PLAN_H_

#include "profiler/plan.h"

namespace perfcast::profiler {

// Sized for about 3 minutes on one H200 with the default timing policy (171 s
// estimated from the descriptors' FLOPs and bytes, both passes, and the
// models' construction on the CPU: 44 model and 163 operation
// configurations); each
// family's largest configuration (by parameters) can be held out
// (`perfcast evaluate --split sizes`).
RunPlan ArchitecturesPlan();

}  // namespace perfcast::profiler

#endif  // PERFCAST_PROFILER_ARCHITECTURES_PLAN_H_
