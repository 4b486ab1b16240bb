#include "client/report_html.h"

#include <cmath>
#include <string>

#include "client/svg_chart.h"
#include "gtest/gtest.h"
#include "tests/client/report_samples.h"

namespace perfcast::client {
namespace {

int Count(const std::string& text, const std::string& needle) {
  int n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

TEST(EvaluationReport, HasEverySectionAndNoRawJson) {
  const v1::EvaluateResponse e = SampleEvaluation();
  const std::string html = RenderEvaluationHtml(e, "gpu");
  for (const char* section :
       {"Which GPUs were trained on and which held out", "Error and bias per GPU",
        "Predicted against measured", "Residuals against measured time",
        "Residuals against model size", "Interval coverage", "Worst workloads",
        "selected features and coefficients", "level 1: operation calls",
        "level 2: whole training or inference steps", "a note the report lists"}) {
    EXPECT_NE(html.find(section), std::string::npos) << section;
  }
  // Charts: bias (2 levels), scatter (2), residuals vs time (2), vs size, coverage.
  EXPECT_EQ(Count(html, "class='chart'"), 8);
  EXPECT_EQ(html.find("data-marks='0'"), std::string::npos);
  // The model's coefficients in raw units: 5.2 / 5 = 1.04 on level1_ms.
  EXPECT_NE(html.find("level1_ms</td><td>1.04</td>"), std::string::npos);
  EXPECT_EQ(html.find("report_json"), std::string::npos);
  EXPECT_EQ(html.find("\"split\""), std::string::npos);  // no JSON dump
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("http"), html.find("http://www.w3.org/2000/svg"));
}

TEST(EvaluationReport, TransferProtocolSaysWhatWasTrainedOnAndCoverage) {
  const std::string html = RenderEvaluationHtml(SampleTransferEvaluation(), "train-test");
  EXPECT_NE(html.find("Train/test GPU protocol: one model fitted on the profiles of "
                      "A100-SXM4-80GB, H100-SXM5-80GB alone predicted every profile of "
                      "H200-SXM-141GB"),
            std::string::npos);
  for (const char* gpu : {"A100-SXM4-80GB", "H100-SXM5-80GB"}) {
    EXPECT_NE(html.find(std::string(gpu) +
                        "</td><td>-</td><td>-</td><td class='l'>a training GPU: not predicted"),
              std::string::npos)
        << gpu;
  }
  // The held-out GPU, trained on the two others.
  EXPECT_NE(html.find("<td class='l'>H200-SXM-141GB</td><td>36</td><td>60</td><td "
                      "class='l'>A100-SXM4-80GB, H100-SXM5-80GB</td>"),
            std::string::npos);
  // Per level: MAPE, median and mean bias, coverage.
  EXPECT_NE(html.find("<td>-1.2%</td><td>-2.0%</td><td>87.5%</td>"), std::string::npos);
  EXPECT_NE(html.find("<td>+4.3%</td><td>+5.0%</td><td>62.5%</td>"), std::string::npos);
  EXPECT_NE(html.find("<th class='l'>operation class</th>"), std::string::npos);
  EXPECT_NE(html.find("<th class='l'>phase</th>"), std::string::npos);
  // Level-1 points carry bands too: their coverage counts all 60.
  EXPECT_NE(html.find(" of 60</td>"), std::string::npos);
  EXPECT_NE(html.find("Fitted on the training GPUs alone"), std::string::npos);
  EXPECT_EQ(Count(html, "class='chart'"), 8);
}

TEST(EvaluationReport, EscapesNamesAndSurvivesNoPoints) {
  v1::EvaluateResponse e;
  v1::EvaluatedPoint* p = e.add_points();
  p->set_gpu_model("<b>evil</b>");
  p->set_level(2);
  p->set_measured_ms(1);
  p->set_predicted_ms(1.1);
  const std::string html = RenderEvaluationHtml(e, "kfold");
  EXPECT_EQ(html.find("<b>evil"), std::string::npos);
  EXPECT_NE(html.find("&lt;b&gt;evil"), std::string::npos);
  EXPECT_NE(RenderEvaluationHtml(v1::EvaluateResponse(), "gpu").find("</html>"), std::string::npos);
}

TEST(RecommendationReport, DrawsTimeAgainstCostWithIntervalsAndTheRanking) {
  const v1::RecommendResponse r = SampleRecommendation();
  const std::string html = RenderRecommendationHtml(r);
  EXPECT_EQ(Count(html, "class='chart'"), 1);
  // Eight priced predictions: a point and two interval bars each, and a
  // label each although four of them crowd two spots.
  EXPECT_NE(html.find("data-marks='24'"), std::string::npos);
  EXPECT_EQ(Count(html, "class='label'"), 8);
  EXPECT_NE(html.find(">deadline<"), std::string::npos);
  EXPECT_NE(html.find(">budget<"), std::string::npos);
  EXPECT_EQ(Count(html, "<tr><td>"), 10);  // one ranking row per candidate
  EXPECT_NE(html.find("does not fit"), std::string::npos);
  EXPECT_NE(html.find("https://example.com/pricing"), std::string::npos);
  EXPECT_NE(html.find("recommended"), std::string::npos);
}

TEST(SvgChart, CountsMarksAndMapsLogAxes) {
  SvgChart chart(400, 300, Axis(1, 1000, true, "x"), Axis(0, 10, false, "y"));
  EXPECT_EQ(chart.marks(), 0);
  chart.Point(10, 5, PaletteColor(0), "a<b");
  chart.Segment(1, 1, 100, 1, PaletteColor(1));
  EXPECT_EQ(chart.marks(), 2);
  const std::string svg = chart.Render("t");
  EXPECT_NE(svg.find("data-marks='2'"), std::string::npos);
  EXPECT_NE(svg.find("a&lt;b"), std::string::npos);
  EXPECT_DOUBLE_EQ(Axis(1, 1000, true, "").Unit(std::sqrt(1000)), 0.5);
  EXPECT_LT(Axis(1, 1000, true, "").Unit(1), Axis(1, 1000, true, "").Unit(1.01));
  EXPECT_DOUBLE_EQ(Axis(0, 10, false, "").Unit(20), 1.0);
}

}  // namespace
}  // namespace perfcast::client
