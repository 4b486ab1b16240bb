#include "models/profile_columns.h"

namespace perfcast::models {
namespace {

// Field accessors: `&p.member` of a mutable profile.
#define PERFCAST_FIELD(member) [](Profile& p) -> ProfileField { return &p.member; }

constexpr ProfileColumn kColumns[] = {
    {"iterations", "count", PERFCAST_FIELD(iteration.count)},
    {"mean_ms", "mean_ms", PERFCAST_FIELD(iteration.mean_ms)},
    {"median_ms", "median_ms", PERFCAST_FIELD(iteration.median_ms)},
    {"p95_ms", "p95_ms", PERFCAST_FIELD(iteration.p95_ms)},
    {"stddev_ms", "stddev_ms", PERFCAST_FIELD(iteration.stddev_ms)},
    {"min_ms", "min_ms", PERFCAST_FIELD(iteration.min_ms)},
    {"max_ms", "max_ms", PERFCAST_FIELD(iteration.max_ms)},
    {"data_load_ms", "data_load_ms", PERFCAST_FIELD(phases.data_load_ms)},
    {"h2d_ms", "h2d_ms", PERFCAST_FIELD(phases.h2d_ms)},
    {"forward_ms", "forward_ms", PERFCAST_FIELD(phases.forward_ms)},
    {"backward_ms", "backward_ms", PERFCAST_FIELD(phases.backward_ms)},
    {"optimizer_ms", "optimizer_ms", PERFCAST_FIELD(phases.optimizer_ms)},
    {"repeats", "repeats", PERFCAST_FIELD(repeats)},
    {"repeat_cv", "repeat_cv", PERFCAST_FIELD(repeat_cv)},
    {"epoch_s", "epoch_s", PERFCAST_FIELD(epoch_s)},
    {"throughput_per_s", "throughput_per_s", PERFCAST_FIELD(throughput_per_s)},
    {"peak_memory_bytes", "peak_memory_bytes", PERFCAST_FIELD(peak_memory_bytes)},
    {"achieved_tflops", "achieved_tflops", PERFCAST_FIELD(achieved_tflops)},
    {"roofline_fraction", "roofline_fraction", PERFCAST_FIELD(roofline_fraction)},
    {"measured_at_us", "measured_at_us", PERFCAST_FIELD(measured_at_us)},
    {"agent_version", "agent_version", PERFCAST_FIELD(agent_version)},
    {"method_version", "method_version", PERFCAST_FIELD(method_version)},
    {"measured_loop", "loop", PERFCAST_FIELD(loop)},
    {"dispatch_ops_per_s", "dispatch_ops_per_s", PERFCAST_FIELD(conditions.dispatch_ops_per_s)},
    {"launch_latency_us", "launch_latency_us", PERFCAST_FIELD(conditions.launch_latency_us)},
    {"cpu_single_thread_score", "cpu_single_thread_score",
     PERFCAST_FIELD(conditions.cpu_single_thread_score)},
    {"h2d_pinned_gbs", "h2d_pinned_gbs", PERFCAST_FIELD(conditions.h2d_pinned_gbs)},
    {"h2d_pageable_gbs", "h2d_pageable_gbs", PERFCAST_FIELD(conditions.h2d_pageable_gbs)},
    {"board_power_w", "board_power_w", PERFCAST_FIELD(conditions.board_power_w)},
    {"sm_clock_mhz", "sm_clock_mhz", PERFCAST_FIELD(conditions.sm_clock_mhz)},
    {"gpu_temperature_c", "gpu_temperature_c", PERFCAST_FIELD(conditions.gpu_temperature_c)},
    {"python_op_us", "python_op_us", PERFCAST_FIELD(conditions.python_op_us)},
    {"torchscript_op_us", "torchscript_op_us", PERFCAST_FIELD(conditions.torchscript_op_us)},
};

#undef PERFCAST_FIELD

}  // namespace

absl::Span<const ProfileColumn> ProfileColumns() { return kColumns; }

ConstProfileField FieldOf(const ProfileColumn& column, const Profile& profile) {
  // The accessors only take a member's address; nothing is written through
  // it, and the pointer handed back is const again.
  return std::visit([](auto* field) -> ConstProfileField { return field; },
                    column.field(const_cast<Profile&>(profile)));
}

}  // namespace perfcast::models
