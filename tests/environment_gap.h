// The one way a test may skip: a declared gap in the machine it runs on (no
// chromium for the browser checks, no PostgreSQL server outside CI, a LibTorch
// without Gloo). ctest counts a test as skipped only when its output carries
// this marker (tests/CMakeLists.txt); GoogleTest's own "[  SKIPPED ]", which it
// also prints for every test of a suite whose SetUpTestSuite failed, fails the
// run.
//
//   if (r.exit_code == 77) SKIP_FOR_ENVIRONMENT_GAP() << "no chromium: " << r.out;
#ifndef PERFCAST_TESTS_ENVIRONMENT_GAP_H_
#define PERFCAST_TESTS_ENVIRONMENT_GAP_H_

#include <gtest/gtest.h>

// Keep equal to the SKIP_REGULAR_EXPRESSION in tests/CMakeLists.txt.
#define SKIP_FOR_ENVIRONMENT_GAP() GTEST_SKIP() << "environment gap: "

#endif  // PERFCAST_TESTS_ENVIRONMENT_GAP_H_
