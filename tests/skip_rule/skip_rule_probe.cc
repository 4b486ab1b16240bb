// The probe of ctest's skip rule (tests/CMakeLists.txt). Run normally, every
// test passes. With PERFCAST_SKIP_RULE_PROBE=1 in the environment (as
// skip_rule_check.sh runs it) each test does what a broken or gapped suite
// does: a SetUpTestSuite that fails, a declared environment gap, and a bare
// GTEST_SKIP. The check asserts that ctest reports them failed, skipped and
// failed.
#include <cstdlib>

#include <gtest/gtest.h>

#include "tests/environment_gap.h"

namespace {

bool Probing() { return std::getenv("PERFCAST_SKIP_RULE_PROBE") != nullptr; }

class SkipRuleProbeSetupFails : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (Probing()) FAIL() << "this suite's setup fails on purpose";
  }
};

TEST_F(SkipRuleProbeSetupFails, IsReportedFailed) {}

TEST(SkipRuleProbe, DeclaredEnvironmentGapIsSkipped) {
  if (Probing()) SKIP_FOR_ENVIRONMENT_GAP() << "the probe declares a gap";
}

TEST(SkipRuleProbe, BareSkipIsReportedFailed) {
  if (Probing()) GTEST_SKIP() << "a skip that declares no environment gap";
}

}  // namespace
