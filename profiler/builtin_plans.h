// The built-in plans "quick", "default" and "full": grids of every model
// family and operation class at three depths, and the default phase of an
// operation grid. Internal to perfcast_plan:
// callers use BuiltinPlan(name) (plan.h), which also serves "architectures"
// (architectures_plan.h).
#ifndef PERFCAST_PROFILER_BUILTIN_PLANS_H_
#define PERFCAST_PROFILER_BUILTIN_PLANS_H_

#include "absl/strings/string_view.h"
#include "models/workload.h"
#include "profiler/plan.h"

namespace perfcast::profiler {

// Every family and operation class at its smallest sizes, both passes and
// every step of the method (< 1 minute on a 2-core CPU: tests and the demo).
RunPlan QuickPlan();

// Few configurations, each measured well (>= 5 timed blocks of >= 100 ms
// over two passes), within about 4.5 minutes on one H200.
RunPlan DefaultPlan();

// Denser grids of every family and operation class (hours on one GPU).
RunPlan FullPlan();

// The phase of an operation grid that names none, in built-in plans and plan
// files alike: operation micro-benchmarks run forward calls only, so they are
// "inference" workloads; an optimizer update is the training step itself.
models::Phase DefaultOpPhase(absl::string_view family);

}  // namespace perfcast::profiler

#endif  // PERFCAST_PROFILER_BUILTIN_PLANS_H_
