// GPU prices per GPU-hour: data with a date and a source, never constants in
// code. The shipped table (gpu_prices.csv, compiled into the binary) gives one
// offer per catalog GPU; a user's file in the same columns overrides it.
//
// Immutable after construction, so safe to share between threads.
#ifndef PERFCAST_MODELS_GPU_PRICES_H_
#define PERFCAST_MODELS_GPU_PRICES_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace perfcast::models {

struct GpuPrice {
  std::string gpu;              // catalog model, e.g. "L4-24GB"
  double usd_per_gpu_hour = 0;  // > 0
  std::string provider;         // "AWS", "Lambda", "-" for an estimate
  std::string offer;            // instance type or offer, free text
  std::string as_of;            // "YYYY-MM" or "YYYY-MM-DD"
  std::string kind;             // "list", "estimate" or "contract"
  std::string source;           // URL or how the number was derived

  friend bool operator==(const GpuPrice&, const GpuPrice&) = default;
};

// Checks one price: a GPU name, a finite price in (0, 10000] USD, a date
// YYYY-MM[-DD], a known kind, and every text free of commas and newlines
// (so that the CSV form round-trips) and at most 300 characters.
// InvalidArgument names the field.
absl::Status ValidateGpuPrice(const GpuPrice& price);

class PriceTable {
 public:
  // The table shipped with this build.
  static const PriceTable& BuiltIn();

  // Parses CSV with the header
  // "gpu,usd_per_gpu_hour,provider,offer,as_of,kind,source"; blank lines and
  // lines starting with '#' are skipped. InvalidArgument names
  // `origin`:line and the field for a bad row, a missing header or a GPU
  // listed twice.
  static absl::StatusOr<PriceTable> ParseCsv(absl::string_view text, absl::string_view origin);

  // The price of `gpu` (case-insensitive), or nullptr.
  const GpuPrice* Find(absl::string_view gpu) const;

  // This table with `overrides` replacing rows of the same GPU and adding
  // the others.
  PriceTable Merged(const std::vector<GpuPrice>& overrides) const;

  const std::vector<GpuPrice>& prices() const { return prices_; }

 private:
  std::vector<GpuPrice> prices_;
};

}  // namespace perfcast::models

#endif  // PERFCAST_MODELS_GPU_PRICES_H_
