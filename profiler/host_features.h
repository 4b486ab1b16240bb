// The host features of a node: what decides the step time of host-bound
// (small) models. Measured by the fingerprint at the start of a run and
// again between passes and at its end.
//
// Internal to perfcast_profiler (includes LibTorch).
#ifndef PERFCAST_PROFILER_HOST_FEATURES_H_
#define PERFCAST_PROFILER_HOST_FEATURES_H_

#include "models/hardware.h"
#include "profiler/device.h"

namespace perfcast::profiler {

// Sets rates.dispatch_ops_per_s (tiny LibTorch ops queued without a
// synchronisation, per host second), launch_latency_us (a raw driver-API
// launch on a GPU; a tiny LibTorch op on a CPU), cpu_single_thread_score
// and, on a GPU, h2d_pinned_gbs and h2d_pageable_gbs. About a second on a
// GPU.
void MeasureHostFeatures(const Device& device, models::MeasuredRates& rates);

}  // namespace perfcast::profiler

#endif  // PERFCAST_PROFILER_HOST_FEATURES_H_
