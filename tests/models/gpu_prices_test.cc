#include "models/gpu_prices.h"

#include <string>

#include "gtest/gtest.h"
#include "models/gpu_catalog.h"

namespace perfcast::models {
namespace {

// Every catalog GPU has a dated, sourced price, so that recommend can cost
// each one; estimates say so.
TEST(GpuPrices, ShippedTableCoversTheCatalogWithDatesAndSources) {
  const PriceTable& table = PriceTable::BuiltIn();
  for (const GpuSpec& gpu : GpuCatalog::BuiltIn().gpus()) {
    const GpuPrice* price = table.Find(gpu.model);
    ASSERT_NE(price, nullptr) << gpu.model;
    EXPECT_TRUE(ValidateGpuPrice(*price).ok()) << gpu.model;
    EXPECT_FALSE(price->source.empty()) << gpu.model;
    if (price->kind == "list") {
      EXPECT_EQ(price->source.rfind("https://", 0), 0u) << gpu.model << ": a list price cites its page";
    }
  }
  EXPECT_EQ(table.prices().size(), GpuCatalog::BuiltIn().gpus().size());
  ASSERT_NE(table.Find("l4-24gb"), nullptr);  // case-insensitive
  EXPECT_EQ(table.Find("nope"), nullptr);
}

TEST(GpuPrices, BadFilesNameTheLineAndField) {
  const std::string header = "gpu,usd_per_gpu_hour,provider,offer,as_of,kind,source\n";
  struct Case {
    std::string text;
    std::string message;
  } cases[] = {
      {"gpu,price\n", "expected the header"},
      {"# only a comment\n", "no header"},
      {header + "L4-24GB,abc,AWS,g6,2024-06,list,x\n", "f.csv:2: usd_per_gpu_hour 'abc'"},
      {header + "L4-24GB,-1,AWS,g6,2024-06,list,x\n", "(0, 10000]"},
      {header + "L4-24GB,1,AWS,g6,June,list,x\n", "'as_of'"},
      {header + "L4-24GB,1,AWS,g6,2024-06,cheap,x\n", "'kind'"},
      {header + "L4-24GB,1,AWS,g6,2024-06,list\n", "expected 7 fields"},
      {header + ",1,AWS,g6,2024-06,list,x\n", "'gpu' is required"},
      {header + "L4-24GB,1,a,b,2024-06,list,x\nl4-24gb,2,a,b,2024-06,list,x\n", "f.csv:3: l4-24gb is listed twice"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<PriceTable> table = PriceTable::ParseCsv(c.text, "f.csv");
    ASSERT_FALSE(table.ok()) << c.text;
    EXPECT_EQ(table.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(table.status().message().find(c.message), std::string::npos)
        << table.status().message();
  }
}

TEST(GpuPrices, UserRowsOverrideAndExtend) {
  absl::StatusOr<PriceTable> user = PriceTable::ParseCsv(
      "gpu,usd_per_gpu_hour,provider,offer,as_of,kind,source\n"
      "L4-24GB,0.50,Acme,reserved,2026-11-01,contract,our contract\n"
      "MI300X,3.00,-,-,2026-11,estimate,guess\n",
      "mine.csv");
  ASSERT_TRUE(user.ok()) << user.status();
  const PriceTable merged = PriceTable::BuiltIn().Merged(user->prices());
  EXPECT_DOUBLE_EQ(merged.Find("L4-24GB")->usd_per_gpu_hour, 0.50);
  EXPECT_EQ(merged.Find("L4-24GB")->kind, "contract");
  EXPECT_NE(merged.Find("MI300X"), nullptr);
  EXPECT_EQ(merged.prices().size(), PriceTable::BuiltIn().prices().size() + 1);
  EXPECT_EQ(*merged.Find("T4-16GB"), *PriceTable::BuiltIn().Find("T4-16GB"));
}

}  // namespace
}  // namespace perfcast::models
