#include "tests/bench/profile_loading.h"

#include <cstdio>

#include "base/status_macros.h"
#include "client/profile_files.h"
#include "models/descriptor.h"
#include "models/gpu_catalog.h"

namespace perfcast::bench {

absl::Status LoadDescribedProfiles(const std::vector<std::string>& files,
                                   std::map<std::string, models::Node>* nodes,
                                   std::vector<predictor::DescribedProfile>& profiles,
                                   const std::function<bool(const models::Profile&)>& keep) {
  for (const std::string& file : files) {
    ASSIGN_OR_RETURN(client::ProfileFormat format, client::FormatOfPath(file));
    client::ProfileSink sink;
    sink.node = [&](const models::Node& node) {
      if (nodes == nullptr) return;
      models::Node complete = node;
      models::CompleteFromCatalog(models::GpuCatalog::BuiltIn(), complete.gpu);
      (*nodes)[node.name] = complete;
    };
    sink.profile = [&](int64_t, const models::Profile& profile) {
      if (keep && !keep(profile)) return;
      absl::StatusOr<models::WorkloadDescriptor> d =
          models::Describe(models::MeasuredWorkload(profile));
      if (d.ok()) profiles.push_back({profile, *std::move(d)});
    };
    sink.bad_record = [&](int64_t line, const std::string& why) {
      std::fprintf(stderr, "%s:%lld: %s\n", file.c_str(), static_cast<long long>(line),
                   why.c_str());
    };
    RETURN_IF_ERROR(client::ReadProfiles(file, format, sink));
  }
  return absl::OkStatus();
}

}  // namespace perfcast::bench
