// Invariant checks for the fuzz targets. A failed check aborts, which
// libFuzzer reports as a crash (and saves the input) and the corpus replay
// test reports as a failure.
#ifndef PERFCAST_TESTS_FUZZ_FUZZ_CHECK_H_
#define PERFCAST_TESTS_FUZZ_FUZZ_CHECK_H_

#include <cstdio>
#include <cstdlib>
#include <string>

#define PERFCAST_FUZZ_CHECK(condition, what)                                              \
  do {                                                                                    \
    if (!(condition)) {                                                                   \
      std::fprintf(stderr, "%s:%d: fuzz invariant failed: %s (%s)\n", __FILE__, __LINE__, \
                   #condition, std::string(what).c_str());                                \
      std::abort();                                                                       \
    }                                                                                     \
  } while (false)

#endif  // PERFCAST_TESTS_FUZZ_FUZZ_CHECK_H_
