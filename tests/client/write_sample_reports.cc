// Writes the sample evaluation (leave-one-GPU-out and train/test) and
// recommendation reports into a directory, for the headless-browser check
// (check_report_in_browser.py).
#include <fstream>
#include <iostream>
#include <string>

#include "client/report_html.h"
#include "tests/client/report_samples.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: write_sample_reports DIR\n";
    return 2;
  }
  const std::string dir = argv[1];
  std::ofstream(dir + "/evaluation.html")
      << perfcast::client::RenderEvaluationHtml(perfcast::client::SampleEvaluation(), "gpu");
  std::ofstream(dir + "/transfer.html") << perfcast::client::RenderEvaluationHtml(
      perfcast::client::SampleTransferEvaluation(), "train-test");
  std::ofstream(dir + "/recommendation.html")
      << perfcast::client::RenderRecommendationHtml(perfcast::client::SampleRecommendation());
  return 0;
}
