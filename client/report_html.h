// The self-contained HTML report of `perfcast evaluate --report`: inline SVG
// charts (predicted vs measured on log axes, error per GPU) and tables, with
// no scripts or outside resources, so it opens anywhere and can be archived.
#ifndef PERFCAST_CLIENT_REPORT_HTML_H_
#define PERFCAST_CLIENT_REPORT_HTML_H_

#include <string>

#include "perfcast/v1/predictor.pb.h"

namespace perfcast::client {

std::string RenderEvaluationHtml(const v1::EvaluateResponse& evaluation, const std::string& split);

}  // namespace perfcast::client

#endif  // PERFCAST_CLIENT_REPORT_HTML_H_
