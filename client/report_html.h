// Self-contained HTML reports: inline SVG charts (svg_chart.h) and tables,
// no scripts and no outside resources, so that a page opens anywhere and can
// be archived. Raw data never goes into the page: the CLI writes it as a JSON
// file beside it.
#ifndef PERFCAST_CLIENT_REPORT_HTML_H_
#define PERFCAST_CLIENT_REPORT_HTML_H_

#include <string>

#include "perfcast/v1/predictor.pb.h"

namespace perfcast::client {

// `perfcast evaluate --report`: error and bias per GPU, predicted against
// measured, residuals against measured time and model size, interval
// coverage, the fitted models' features and coefficients, the worst
// workloads, and which GPUs were trained on and held out (the response's
// train_gpus / test_gpus under the train/test protocol), with MAPE, bias and
// interval coverage per level, GPU, operation class, family and phase.
// `split` is the CLI's name of the split ("gpu", "sizes", "kfold",
// "train-test").
std::string RenderEvaluationHtml(const v1::EvaluateResponse& evaluation, const std::string& split);

// `perfcast recommend --report`: job time against cost with both intervals,
// the deadline and budget, and the ranked table with exclusions.
std::string RenderRecommendationHtml(const v1::RecommendResponse& recommendation);

}  // namespace perfcast::client

#endif  // PERFCAST_CLIENT_REPORT_HTML_H_
