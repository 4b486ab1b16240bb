// A store filled with synthetic profiles that follow a known roofline law,
// for tests and benchmarks of the Predictor service: made-up GPU nodes with
// measured rates, operation micro-benchmarks (gemm, elementwise) and whole
// model runs of real families described by models::Describe.
#ifndef PERFCAST_TESTS_SERVER_SYNTHETIC_STORE_H_
#define PERFCAST_TESTS_SERVER_SYNTHETIC_STORE_H_

#include <vector>

#include "absl/status/status.h"
#include "db/store.h"
#include "models/descriptor.h"
#include "models/hardware.h"

namespace perfcast::testing {

// The made-up nodes: alpha1, alpha2 (architecture "alpha"), beta1, beta2
// ("beta"). GPU models are "<name>-gpu".
std::vector<models::Node> SyntheticNodes();

// The law: per operation call, 1.3 × compute time + 1.15 × memory time +
// launches × launch latency (host->device copies: bytes / copy bandwidth);
// an iteration is the sum over its operations.
double TrueIterationMs(const models::WorkloadDescriptor& descriptor, const models::Node& node);

// Registers `nodes` and imports operation and model profiles on each of
// them except those named in `unprofiled`.
absl::Status FillSyntheticStore(db::Store& store, const std::vector<models::Node>& nodes,
                                const std::vector<std::string>& unprofiled);

}  // namespace perfcast::testing

#endif  // PERFCAST_TESTS_SERVER_SYNTHETIC_STORE_H_
