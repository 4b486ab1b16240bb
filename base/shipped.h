// Documents compiled into the binaries (the GPU catalog, the price table,
// the multi-GPU implementation terms) are parsed once, on first use.
// Their unit tests parse each shipped document, so one that does not parse
// is a build defect: the process names it and aborts rather than serve
// without it.
#ifndef PERFCAST_BASE_SHIPPED_H_
#define PERFCAST_BASE_SHIPPED_H_

#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>

#include "absl/status/statusor.h"

namespace perfcast {

// The parsed document, owned for the life of the process; aborts with one
// line on stderr naming `what` when `parsed` failed.
//
//   static const GpuCatalog* const kCatalog =
//       ShippedOrDie("gpu_catalog.json", Parse(kGpuCatalogJson));
template <typename T>
const T* ShippedOrDie(const char* what, absl::StatusOr<T> parsed) {
  if (!parsed.ok()) {
    std::fprintf(stderr, "shipped %s does not parse: %s\n", what,
                 std::string(parsed.status().message()).c_str());
    std::abort();
  }
  return new T(*std::move(parsed));
}

}  // namespace perfcast

#endif  // PERFCAST_BASE_SHIPPED_H_
