#include "predictor/predict.h"

namespace perfcast::predictor {

absl::string_view MethodName(Method method, bool calibrated) {
  switch (method) {
    case Method::kTwoLevel: return calibrated ? "two-level+calibrated" : "two-level";
    case Method::kTwoLevelReduced:
      return calibrated ? "two-level-reduced+calibrated" : "two-level-reduced";
    case Method::kLevel1Operation:
      return calibrated ? "level1-operation+calibrated" : "level1-operation";
    case Method::kLevel1Sum: return calibrated ? "level1-sum+calibrated" : "level1-sum";
    case Method::kLevel2Direct: return calibrated ? "level2-direct+calibrated" : "level2-direct";
    case Method::kLevel1Fallback:
      return calibrated ? "level1-fallback+calibrated" : "level1-fallback";
  }
  return "unknown";
}

int MethodLevel(Method method) {
  return method == Method::kLevel1Sum || method == Method::kLevel1Operation ||
                 method == Method::kLevel1Fallback
             ? 1
             : 2;
}

}  // namespace perfcast::predictor
