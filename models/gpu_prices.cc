#include "models/gpu_prices.h"

#include <cmath>
#include <sstream>
#include <string>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "base/shipped.h"
#include "models/csv_reader.h"

namespace perfcast::models {

extern const char kGpuPricesCsv[];

namespace {

constexpr size_t kMaxText = 300;
constexpr char kHeader[] = "gpu,usd_per_gpu_hour,provider,offer,as_of,kind,source";

bool IsDate(absl::string_view s) {
  // YYYY-MM or YYYY-MM-DD, digits where digits belong.
  if (s.size() != 7 && s.size() != 10) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    const bool dash = i == 4 || i == 7;
    if (dash ? s[i] != '-' : !absl::ascii_isdigit(static_cast<unsigned char>(s[i]))) return false;
  }
  return true;
}

}  // namespace

absl::Status ValidateGpuPrice(const GpuPrice& p) {
  const std::pair<const char*, const std::string*> texts[] = {
      {"gpu", &p.gpu},     {"provider", &p.provider}, {"offer", &p.offer},
      {"as_of", &p.as_of}, {"kind", &p.kind},         {"source", &p.source}};
  for (const auto& [name, text] : texts) {
    if (text->size() > kMaxText || absl::StrContains(*text, ',') ||
        absl::StrContains(*text, '\n') || absl::StrContains(*text, '\r')) {
      return absl::InvalidArgumentError(
          absl::StrCat("price: '", name, "' must be at most ", kMaxText,
                       " characters without commas or line breaks"));
    }
  }
  if (p.gpu.empty()) return absl::InvalidArgumentError("price: 'gpu' is required");
  if (!std::isfinite(p.usd_per_gpu_hour) || !(p.usd_per_gpu_hour > 0) ||
      p.usd_per_gpu_hour > 10000) {
    return absl::InvalidArgumentError(absl::StrCat(
        "price of ", p.gpu, ": 'usd_per_gpu_hour' must be in (0, 10000], got ",
        p.usd_per_gpu_hour));
  }
  if (!IsDate(p.as_of)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "price of ", p.gpu, ": 'as_of' must be YYYY-MM or YYYY-MM-DD, got '", p.as_of, "'"));
  }
  if (p.kind != "list" && p.kind != "estimate" && p.kind != "contract") {
    return absl::InvalidArgumentError(absl::StrCat(
        "price of ", p.gpu, ": 'kind' must be list, estimate or contract, got '", p.kind, "'"));
  }
  return absl::OkStatus();
}

const PriceTable& PriceTable::BuiltIn() {
  static const PriceTable* const kTable =
      ShippedOrDie("gpu_prices.csv", ParseCsv(kGpuPricesCsv, "gpu_prices.csv"));
  return *kTable;
}

absl::StatusOr<PriceTable> PriceTable::ParseCsv(absl::string_view text,
                                                absl::string_view origin) {
  PriceTable table;
  std::istringstream in{std::string(text)};
  CsvReader reader(in, {.comment_lines = true});
  std::vector<std::string> cells;
  bool header = false;
  while (true) {
    absl::StatusOr<bool> more = reader.Next(cells);
    const std::string where = absl::StrCat(origin, ":", reader.line_number(), ": ");
    if (!more.ok()) return absl::InvalidArgumentError(absl::StrCat(where, more.status().message()));
    if (!*more) break;
    for (std::string& cell : cells) absl::StripAsciiWhitespace(&cell);
    if (!header) {
      if (absl::StrJoin(cells, ",") != kHeader) {
        return absl::InvalidArgumentError(
            absl::StrCat(where, "expected the header '", kHeader, "'"));
      }
      header = true;
      continue;
    }
    if (cells.size() != 7) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, "expected 7 fields, got ", cells.size()));
    }
    GpuPrice price;
    price.gpu = cells[0];
    if (!absl::SimpleAtod(cells[1], &price.usd_per_gpu_hour)) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, "usd_per_gpu_hour '", cells[1], "' is not a number"));
    }
    price.provider = cells[2];
    price.offer = cells[3];
    price.as_of = cells[4];
    price.kind = cells[5];
    price.source = cells[6];
    if (absl::Status s = ValidateGpuPrice(price); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(where, s.message()));
    }
    if (table.Find(price.gpu) != nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(where, price.gpu, " is listed twice"));
    }
    table.prices_.push_back(std::move(price));
  }
  if (!header) return absl::InvalidArgumentError(absl::StrCat(origin, ": no header"));
  return table;
}

const GpuPrice* PriceTable::Find(absl::string_view gpu) const {
  for (const GpuPrice& p : prices_) {
    if (absl::EqualsIgnoreCase(p.gpu, gpu)) return &p;
  }
  return nullptr;
}

PriceTable PriceTable::Merged(const std::vector<GpuPrice>& overrides) const {
  PriceTable out = *this;
  for (const GpuPrice& o : overrides) {
    bool replaced = false;
    for (GpuPrice& p : out.prices_) {
      if (absl::EqualsIgnoreCase(p.gpu, o.gpu)) {
        p = o;
        replaced = true;
      }
    }
    if (!replaced) out.prices_.push_back(o);
  }
  return out;
}

}  // namespace perfcast::models
