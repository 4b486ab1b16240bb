#include "client/report_html.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "base/quantile.h"
#include "client/predict_query.h"
#include "client/recommend_rows.h"
#include "client/svg_chart.h"
#include "models/descriptor.h"
#include "models/workload.h"
#include "nlohmann/json.hpp"
#include "predictor/model.h"

namespace perfcast::client {
namespace {

constexpr char kStyle[] =
    "body{font-family:sans-serif;margin:2em auto;max-width:1150px;color:#222;line-height:1.4}"
    "table{border-collapse:collapse;margin:.5em 0 1.5em}td,th{border:1px solid #ccc;"
    "padding:3px 8px;text-align:right;vertical-align:top}th{background:#f0f0f0}"
    "td.l,th.l{text-align:left}.ok{color:#2a7a2a;font-weight:bold}.no{color:#b03030}"
    "p.note{color:#555;font-size:90%}h2{margin-top:1.6em;border-bottom:1px solid #ddd}"
    "svg.chart{display:block;margin:.5em 0}";

constexpr size_t kMaxChartPoints = 3000;

std::string Head(const std::string& title) {
  return absl::StrCat("<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>",
                      HtmlEscape(title), "</title><style>", kStyle, "</style></head><body><h1>",
                      HtmlEscape(title), "</h1>");
}

std::string Percent(double fraction) { return absl::StrFormat("%.1f%%", 100 * fraction); }
std::string SignedPercent(double fraction) { return absl::StrFormat("%+.1f%%", 100 * fraction); }

std::string Ms(double ms) {
  if (ms >= 100) return absl::StrFormat("%.0f", ms);
  if (ms >= 1) return absl::StrFormat("%.2f", ms);
  return absl::StrFormat("%.4f", ms);
}

const char* LevelName(int level) {
  return level == 1 ? "level 1: operation calls (GEMM, convolution, ... micro-benchmarks)"
                    : "level 2: whole training or inference steps";
}

double SignedError(const v1::EvaluatedPoint& p) {
  return (p.predicted_ms() - p.measured_ms()) / p.measured_ms();
}

// Points of one level with usable times.
std::vector<const v1::EvaluatedPoint*> LevelPoints(const v1::EvaluateResponse& e, int level) {
  std::vector<const v1::EvaluatedPoint*> out;
  for (const v1::EvaluatedPoint& p : e.points()) {
    if (p.level() == level && p.measured_ms() > 0 && p.predicted_ms() > 0) out.push_back(&p);
  }
  return out;
}

// The GPUs of the evaluation in a stable order, so a GPU keeps its colour.
std::vector<std::string> Gpus(const v1::EvaluateResponse& e) {
  std::set<std::string> gpus;
  for (const v1::EvaluatedPoint& p : e.points()) gpus.insert(p.gpu_model());
  return {gpus.begin(), gpus.end()};
}

size_t IndexOf(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) - names.begin();
}

struct GroupStats {
  int64_t count = 0;
  double mape = 0;
  double bias = 0;  // mean signed error
  double median = 0, p10 = 0, p90 = 0;
  int64_t banded = 0;   // points with an interval
  int64_t covered = 0;  // of those, measured inside it
};

GroupStats Stats(const std::vector<const v1::EvaluatedPoint*>& points) {
  GroupStats s;
  std::vector<double> errors;
  for (const v1::EvaluatedPoint* p : points) {
    const double e = SignedError(*p);
    errors.push_back(e);
    s.mape += std::abs(e);
    s.bias += e;
    if (p->predicted_ms_high() > 0) {
      ++s.banded;
      if (p->measured_ms() >= p->predicted_ms_low() && p->measured_ms() <= p->predicted_ms_high()) {
        ++s.covered;
      }
    }
  }
  s.count = static_cast<int64_t>(points.size());
  if (s.count > 0) {
    s.mape /= s.count;
    s.bias /= s.count;
    s.median = Quantile(errors, 0.5);
    s.p10 = Quantile(errors, 0.1);
    s.p90 = Quantile(errors, 0.9);
  }
  return s;
}

std::string Scatter(const std::vector<const v1::EvaluatedPoint*>& points,
                    const std::vector<std::string>& gpus, const std::string& title) {
  if (points.empty()) return "<p class='note'>No held-out points at this level.</p>";
  double lo = HUGE_VAL, hi = 0;
  for (const v1::EvaluatedPoint* p : points) {
    lo = std::min({lo, p->measured_ms(), p->predicted_ms()});
    hi = std::max({hi, p->measured_ms(), p->predicted_ms()});
  }
  SvgChart chart(760, 480, Axis(lo, hi, true, "measured ms (log)"),
                 Axis(lo, hi, true, "predicted ms (log)"));
  chart.Diagonal("#888");
  const size_t stride = std::max<size_t>(1, points.size() / kMaxChartPoints);
  for (size_t i = 0; i < points.size(); i += stride) {
    const v1::EvaluatedPoint& p = *points[i];
    chart.Point(p.measured_ms(), p.predicted_ms(), PaletteColor(IndexOf(gpus, p.gpu_model())),
                absl::StrCat(p.gpu_model(), " ", p.workload_key(), ": measured ", Ms(p.measured_ms()),
                             " ms, predicted ", Ms(p.predicted_ms()), " ms"),
                2.5);
  }
  for (size_t g = 0; g < gpus.size(); ++g) chart.Legend(gpus[g], PaletteColor(g));
  return chart.Render(title);
}

// Signed error (y, clamped to ±150%) against any positive x on a log axis.
std::string Residuals(const std::vector<std::pair<double, const v1::EvaluatedPoint*>>& points,
                      const std::vector<std::string>& groups, bool by_family,
                      const std::string& x_label, const std::string& title) {
  if (points.empty()) return "<p class='note'>No held-out points at this level.</p>";
  double lo = HUGE_VAL, hi = 0, y_lo = -0.2, y_hi = 0.2;
  for (const auto& [x, p] : points) {
    lo = std::min(lo, x);
    hi = std::max(hi, x);
    y_lo = std::min(y_lo, std::max(SignedError(*p), -1.0));
    y_hi = std::max(y_hi, std::min(SignedError(*p), 1.5));
  }
  SvgChart chart(760, 360, Axis(lo, hi, true, x_label),
                 Axis(100 * y_lo, 100 * y_hi, false, "error % (predicted − measured) / measured"));
  chart.HorizontalLine(0, "#555", "no error");
  const size_t stride = std::max<size_t>(1, points.size() / kMaxChartPoints);
  for (size_t i = 0; i < points.size(); i += stride) {
    const auto& [x, p] = points[i];
    const std::string& group = by_family ? p->family() : p->gpu_model();
    chart.Point(x, 100 * std::clamp(SignedError(*p), -1.0, 1.5),
                PaletteColor(IndexOf(groups, group)),
                absl::StrCat(p->gpu_model(), " ", p->workload_key(), ": ",
                             SignedPercent(SignedError(*p))),
                2.5);
  }
  for (size_t g = 0; g < groups.size(); ++g) chart.Legend(groups[g], PaletteColor(g));
  return chart.Render(title);
}

// Bias per GPU: a bar from 0 to the mean signed error, a whisker over the
// 10th..90th percentiles of the signed error.
std::string BiasChart(const std::map<std::string, GroupStats>& by_gpu, const std::string& title) {
  if (by_gpu.empty()) return "<p class='note'>No groups.</p>";
  double lo = -0.1, hi = 0.1;
  for (const auto& [gpu, s] : by_gpu) {
    lo = std::min({lo, s.p10, s.bias});
    hi = std::max({hi, s.p90, s.bias});
  }
  lo = std::max(lo, -1.0);
  hi = std::min(hi, 1.5);
  const int rows = static_cast<int>(by_gpu.size());
  SvgChart chart(760, 60 + 34 * rows, Axis(100 * lo, 100 * hi, false, "signed error %"),
                 Axis(0, 1, false, ""));
  chart.SetLeftMargin(170);
  std::vector<std::string> labels;
  int row = 0;
  for (const auto& [gpu, s] : by_gpu) {
    labels.push_back(gpu);
    chart.Bar(0, 100 * std::clamp(s.bias, lo, hi), row, rows, s.bias > 0 ? "#e15759" : "#4e79a7",
              absl::StrCat(gpu, ": bias ", SignedPercent(s.bias), ", MAPE ", Percent(s.mape)));
    chart.RowWhisker(100 * std::clamp(s.p10, lo, hi), 100 * std::clamp(s.p90, lo, hi), row, rows,
                     "#222");
    ++row;
  }
  chart.RowLabels(labels);
  chart.VerticalLine(0, "#555", "");
  chart.Legend("over-predicts", "#e15759");
  chart.Legend("under-predicts", "#4e79a7");
  chart.Legend("10th..90th pct", "#222");
  return chart.Render(title);
}

std::string CoverageChart(const std::map<std::string, GroupStats>& by_gpu) {
  std::vector<std::pair<std::string, GroupStats>> rows;
  for (const auto& [gpu, s] : by_gpu) {
    if (s.banded > 0) rows.emplace_back(gpu, s);
  }
  if (rows.empty()) return "<p class='note'>No point carries an interval.</p>";
  const int n = static_cast<int>(rows.size());
  SvgChart chart(760, 60 + 34 * n, Axis(0, 100, false, "% of measured times inside the interval"),
                 Axis(0, 1, false, ""));
  chart.SetLeftMargin(170);
  std::vector<std::string> labels;
  for (int i = 0; i < n; ++i) {
    const GroupStats& s = rows[i].second;
    labels.push_back(rows[i].first);
    const double coverage = static_cast<double>(s.covered) / s.banded;
    chart.Bar(0, 100 * coverage, i, n, std::abs(coverage - 0.8) <= 0.1 ? "#59a14f" : "#f28e2b",
              absl::StrCat(rows[i].first, ": ", Percent(coverage), " of ", s.banded));
  }
  chart.RowLabels(labels);
  chart.VerticalLine(80, "#555", "nominal 80%");
  return chart.Render("interval coverage per GPU");
}

std::string ModelsSection(const v1::EvaluateResponse& e) {
  nlohmann::json report = nlohmann::json::parse(e.report_json(), nullptr, false);
  if (report.is_discarded() || !report.contains("model") || report["model"].is_null()) {
    return "<p class='note'>The model fitted on the whole selection is not available.</p>";
  }
  absl::StatusOr<predictor::PredictorModel> model = predictor::ParseModel(report["model"].dump());
  if (!model.ok()) {
    return absl::StrCat("<p class='note'>The fitted model cannot be read: ",
                        HtmlEscape(std::string(model.status().message())), "</p>");
  }
  const bool transfer = report.value("model_fitted_on", "") == "training GPUs";
  std::string html = absl::StrCat(
      transfer ? "<p>Fitted on the training GPUs alone: the model that predicted the held-out "
                 "GPUs. "
               : "<p>Fitted on the whole selection: what `perfcast fit` on the same profiles "
                 "would serve. ",
      "Coefficients are in the features' own units (level-1 features are times in ms, so a "
      "coefficient is an efficiency: 1.0 means the roofline time).</p>"
      "<table><tr><th class='l'>model</th><th>CV MAPE</th><th>rows</th><th class='l'>trained on "
      "GPUs</th><th class='l'>feature</th><th>coefficient</th></tr>");
  auto add = [&](const predictor::FittedModel& m) {
    const std::vector<double> raw = m.fit.RawCoefficients();
    const size_t rows = m.features.size() + 1;
    absl::StrAppendFormat(
        &html,
        "<tr><td class='l' rowspan='%d'>level %d / %s</td><td rowspan='%d'>%s</td>"
        "<td rowspan='%d'>%d</td><td class='l' rowspan='%d'>%s</td><td class='l'>intercept</td>"
        "<td>%.4g</td></tr>",
        rows, m.level, HtmlEscape(m.scope), rows, Percent(m.cv_mape), rows, m.training_rows, rows,
        HtmlEscape(absl::StrJoin(m.training_gpus, ", ")), m.fit.RawIntercept());
    for (size_t j = 0; j < m.features.size(); ++j) {
      absl::StrAppendFormat(&html, "<tr><td class='l'>%s</td><td>%.4g</td></tr>",
                            HtmlEscape(m.features[j]), raw[j]);
    }
  };
  for (const auto& [op_class, m] : model->level1) add(m);
  for (const auto& [phase, m] : model->level2) add(m);
  html += "</table>";
  if (!model->memory.empty()) {
    html +=
        "<h3>Memory fit (peak device memory per step)</h3><table><tr><th class='l'>scope</th>"
        "<th>profiles</th><th>CV MAPE</th><th>largest error</th></tr>";
    for (const auto& [scope, c] : model->memory.calibrations) {
      absl::StrAppendFormat(&html, "<tr><td class='l'>%s</td><td>%d</td><td>%s</td><td>%s</td></tr>",
                            HtmlEscape(scope), c.rows, Percent(c.cv_mape), Percent(c.cv_max_error));
    }
    html += "</table>";
  }
  return html;
}

std::string TrainedAndHeldOut(const v1::EvaluateResponse& e, const std::string& split,
                              const std::vector<std::string>& gpus) {
  std::string how;
  if (!e.test_gpus().empty()) {
    how = absl::StrCat(
        "Train/test GPU protocol: one model fitted on the profiles of ",
        absl::StrJoin(e.train_gpus(), ", "), " alone predicted every profile of ",
        absl::StrJoin(e.test_gpus(), ", "),
        " from their spec sheets; nothing measured on a held-out GPU reached the fit.");
  } else if (split == "gpu") {
    how = "Leave one GPU out: each GPU's profiles were predicted by a model fitted on the "
          "other GPUs only.";
  } else if (split == "sizes") {
    how = absl::StrCat("Held-out sizes: models were fitted on workloads with at most ",
                       e.size_threshold(),
                       " inner modules (layers/blocks) on every GPU and predicted the larger ones.");
  } else {
    how = "Random k-fold: every GPU is in both the training and the held-out folds.";
  }
  std::string html = absl::StrCat(
      "<p>", HtmlEscape(how),
      "</p><table><tr><th class='l'>GPU</th><th>held-out level-2 points</th><th>held-out "
      "level-1 points</th><th class='l'>trained on</th></tr>");
  for (const std::string& gpu : e.train_gpus()) {
    absl::StrAppendFormat(&html,
                          "<tr><td class='l'>%s</td><td>-</td><td>-</td><td class='l'>a training "
                          "GPU: not predicted</td></tr>",
                          HtmlEscape(gpu));
  }
  for (const std::string& gpu : gpus) {
    int64_t l1 = 0, l2 = 0;
    for (const v1::EvaluatedPoint& p : e.points()) {
      if (p.gpu_model() != gpu) continue;
      (p.level() == 1 ? l1 : l2) += 1;
    }
    std::string trained;
    if (!e.test_gpus().empty()) {
      trained = absl::StrJoin(e.train_gpus(), ", ");
    } else if (split == "gpu") {
      std::vector<std::string> others;
      for (const std::string& g : gpus) {
        if (g != gpu) others.push_back(g);
      }
      trained = others.empty() ? "nothing else" : absl::StrJoin(others, ", ");
    } else if (split == "sizes") {
      trained = "all GPUs, smaller sizes";
    } else {
      trained = "all GPUs, other folds";
    }
    absl::StrAppendFormat(&html, "<tr><td class='l'>%s</td><td>%d</td><td>%d</td><td class='l'>%s</td></tr>",
                          HtmlEscape(gpu), l2, l1, HtmlEscape(trained));
  }
  return html + "</table>";
}

std::string StatsTable(const std::map<std::string, GroupStats>& groups, const std::string& what) {
  std::string html = absl::StrCat(
      "<table><tr><th class='l'>", HtmlEscape(what),
      "</th><th>points</th><th>MAPE</th><th>bias (mean signed)</th><th>median signed</th>"
      "<th>10th..90th pct</th><th>interval coverage</th></tr>");
  for (const auto& [name, s] : groups) {
    absl::StrAppendFormat(&html,
                          "<tr><td class='l'>%s</td><td>%d</td><td>%s</td><td>%s</td><td>%s</td>"
                          "<td>%s .. %s</td><td>%s</td></tr>",
                          HtmlEscape(name), s.count, Percent(s.mape), SignedPercent(s.bias),
                          SignedPercent(s.median), SignedPercent(s.p10), SignedPercent(s.p90),
                          s.banded > 0 ? absl::StrCat(Percent(static_cast<double>(s.covered) / s.banded),
                                                      " of ", s.banded)
                                       : "-");
  }
  return html + "</table>";
}

std::string WorstTable(std::vector<const v1::EvaluatedPoint*> points, size_t n) {
  std::sort(points.begin(), points.end(), [](const auto* a, const auto* b) {
    return std::abs(SignedError(*a)) > std::abs(SignedError(*b));
  });
  points.resize(std::min(points.size(), n));
  std::string html =
      "<table><tr><th class='l'>GPU</th><th class='l'>workload</th><th>measured ms</th>"
      "<th>predicted ms</th><th>interval ms</th><th>error</th></tr>";
  for (const v1::EvaluatedPoint* p : points) {
    absl::StrAppendFormat(
        &html, "<tr><td class='l'>%s</td><td class='l'>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td></tr>",
        HtmlEscape(p->gpu_model()), HtmlEscape(p->workload_key()), Ms(p->measured_ms()),
        Ms(p->predicted_ms()),
        p->predicted_ms_high() > 0
            ? absl::StrCat(Ms(p->predicted_ms_low()), " .. ", Ms(p->predicted_ms_high()))
            : "-",
        SignedPercent(SignedError(*p)));
  }
  return html + "</table>";
}

// Trainable parameters of a point's workload, from its key; 0 if it cannot
// be described (an unknown family in an old store).
double Parameters(const v1::EvaluatedPoint& p) {
  absl::StatusOr<models::WorkloadSpec> spec = models::ParseWorkloadKey(p.workload_key());
  if (!spec.ok()) return 0;
  absl::StatusOr<models::WorkloadDescriptor> d = models::Describe(*spec);
  return d.ok() ? d->parameters : 0;
}

}  // namespace

std::string RenderEvaluationHtml(const v1::EvaluateResponse& e, const std::string& split) {
  const std::vector<std::string> gpus = Gpus(e);
  std::string html = Head("perfcast evaluation");
  absl::StrAppendFormat(
      &html,
      "<p>Split <b>%s</b>. Held-out error (MAPE): <b>%s</b> at %s; <b>%s</b> at %s. %d "
      "held-out points. Signed error is (predicted − measured) / measured: positive means the "
      "prediction is too slow.</p>",
      HtmlEscape(split), Percent(e.level2_mape()), LevelName(2), Percent(e.level1_mape()),
      LevelName(1), e.points_size());
  std::string levels;
  for (int level : {2, 1}) {
    const int64_t rows = level == 1 ? e.level1_rows() : e.level2_rows();
    if (rows == 0) continue;
    absl::StrAppendFormat(
        &levels, "<tr><td class='l'>%s</td><td>%d</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td></tr>",
        LevelName(level), rows, Percent(level == 1 ? e.level1_mape() : e.level2_mape()),
        SignedPercent(level == 1 ? e.level1_bias() : e.level2_bias()),
        SignedPercent(level == 1 ? e.level1_mean_bias() : e.level2_mean_bias()),
        Percent(level == 1 ? e.level1_coverage() : e.level2_coverage()));
  }
  if (!levels.empty()) {
    absl::StrAppend(&html,
                    "<table><tr><th class='l'>level</th><th>held-out rows</th><th>MAPE</th>"
                    "<th>bias (median signed)</th><th>bias (mean signed)</th><th>interval "
                    "coverage (10th..90th, nominal 80%)</th></tr>",
                    levels, "</table>");
  }

  html += "<h2>Which GPUs were trained on and which held out</h2>" +
          TrainedAndHeldOut(e, split, gpus);

  for (int level : {2, 1}) {
    const std::vector<const v1::EvaluatedPoint*> points = LevelPoints(e, level);
    if (points.empty()) continue;
    std::map<std::string, std::vector<const v1::EvaluatedPoint*>> per_gpu, per_family,
        per_phase, per_class;
    for (const v1::EvaluatedPoint* p : points) {
      per_gpu[p->gpu_model()].push_back(p);
      per_family[p->family()].push_back(p);
      if (!p->phase().empty()) per_phase[p->phase()].push_back(p);
      if (!p->op_class().empty()) per_class[p->op_class()].push_back(p);
    }
    std::map<std::string, GroupStats> gpu_stats, family_stats, phase_stats, class_stats;
    for (const auto& [gpu, ps] : per_gpu) gpu_stats[gpu] = Stats(ps);
    for (const auto& [family, ps] : per_family) family_stats[family] = Stats(ps);
    for (const auto& [phase, ps] : per_phase) phase_stats[phase] = Stats(ps);
    for (const auto& [op_class, ps] : per_class) class_stats[op_class] = Stats(ps);
    const std::string level_name = LevelName(level);
    absl::StrAppend(&html, "<h2>Error and bias per GPU (", level_name, ")</h2>",
                    BiasChart(gpu_stats, absl::StrCat("signed error per GPU, ", level_name)),
                    StatsTable(gpu_stats, "GPU"));
    if (!class_stats.empty()) html += StatsTable(class_stats, "operation class");
    html += StatsTable(family_stats, "family");
    if (!phase_stats.empty()) html += StatsTable(phase_stats, "phase");
    absl::StrAppend(&html, "<h2>Predicted against measured (", level_name, ")</h2>",
                    Scatter(points, gpus, absl::StrCat("predicted vs measured, ", level_name)),
                    "<p class='note'>Dashed: predicted = measured. Colour: GPU.</p>");
    std::vector<std::pair<double, const v1::EvaluatedPoint*>> by_time;
    for (const v1::EvaluatedPoint* p : points) by_time.emplace_back(p->measured_ms(), p);
    absl::StrAppend(&html, "<h2>Residuals against measured time (", level_name, ")</h2>",
                    Residuals(by_time, gpus, false, "measured ms (log)",
                              absl::StrCat("error vs measured time, ", level_name)));
    if (level == 2) {
      std::vector<std::pair<double, const v1::EvaluatedPoint*>> by_size;
      std::set<std::string> families;
      for (const v1::EvaluatedPoint* p : points) {
        const double parameters = Parameters(*p);
        if (parameters > 0) {
          by_size.emplace_back(parameters, p);
          families.insert(p->family());
        }
      }
      absl::StrAppend(&html, "<h2>Residuals against model size (", level_name, ")</h2>",
                      Residuals(by_size, {families.begin(), families.end()}, true,
                                "trainable parameters (log)", "error vs model size"),
                      "<p class='note'>Colour: model family.</p>");
      absl::StrAppend(&html, "<h2>Interval coverage (", level_name, ")</h2>",
                      "<p>Each prediction carries a 10th..90th percentile interval from the "
                      "cross-validated errors: about 80% of measured times should fall inside.</p>",
                      CoverageChart(gpu_stats));
      absl::StrAppend(&html, "<h2>Worst workloads (", level_name, ")</h2>", WorstTable(points, 15));
    }
  }
  html += "<h2>Fitted models: selected features and coefficients</h2>" + ModelsSection(e);
  if (!e.notes().empty()) {
    html += "<h2>Notes</h2><ul>";
    for (const std::string& note : e.notes()) absl::StrAppend(&html, "<li>", HtmlEscape(note), "</li>");
    html += "</ul>";
  }
  return html + "</body></html>\n";
}

std::string RenderRecommendationHtml(const v1::RecommendResponse& r) {
  std::string html = Head("perfcast recommendation");
  absl::StrAppendFormat(&html,
                        "<p>Workload <b>%s</b>, %d iterations. Ranked by <b>%s</b>",
                        HtmlEscape(r.workload_key()), r.iterations(), HtmlEscape(r.rank_by()));
  if (r.deadline_seconds() > 0) {
    absl::StrAppend(&html, "; deadline <b>", Duration(r.deadline_seconds()), "</b>");
  }
  if (r.budget_usd() > 0) absl::StrAppendFormat(&html, "; budget <b>$%.2f</b>", r.budget_usd());
  absl::StrAppendFormat(&html,
                        ". Model %d (v%d). A candidate meets the deadline (and budget) with at "
                        "least 90%% confidence when the 90th percentile of its time (cost) does.</p>",
                        r.model_id(), r.model_version());

  // A point per GPU model and count, as the CLI's table has a row: a dozen
  // nodes of one model would be a dozen points with one label each.
  std::vector<const v1::Candidate*> plotted;
  double t_lo = HUGE_VAL, t_hi = 0, c_lo = HUGE_VAL, c_hi = 0;
  double longest = 0;
  for (const v1::Candidate& c : r.candidates()) {
    if (c.predicted()) longest = std::max(longest, c.job_seconds_high());
  }
  // One unit of time for the chart and the table.
  const TimeUnit unit = TimeUnitFor(longest);
  for (const RecommendRow& row : SummariseCandidates(r)) {
    const v1::Candidate& c = *row.shown;
    if (!c.predicted() || !c.priced() || !(c.cost_usd() > 0)) continue;
    plotted.push_back(&c);
    t_lo = std::min(t_lo, c.job_seconds_low());
    t_hi = std::max(t_hi, c.job_seconds_high());
    c_lo = std::min(c_lo, c.cost_usd_low());
    c_hi = std::max(c_hi, c.cost_usd_high());
  }
  html += "<h2>Job time against cost</h2>";
  if (plotted.empty()) {
    html += "<p class='note'>No candidate has both a predicted time and a price.</p>";
  } else {
    if (r.deadline_seconds() > 0) {
      t_lo = std::min(t_lo, r.deadline_seconds());
      t_hi = std::max(t_hi, r.deadline_seconds());
    }
    if (r.budget_usd() > 0) {
      c_lo = std::min(c_lo, r.budget_usd());
      c_hi = std::max(c_hi, r.budget_usd());
    }
    const double u = unit.seconds;
    SvgChart chart(900, 520,
                   Axis(t_lo / u, t_hi / u, true,
                        absl::StrCat("predicted job time, ", unit.name, " (log)")),
                   Axis(c_lo, c_hi, true, "predicted cost, USD (log)"));
    for (const v1::Candidate* c : plotted) {
      const char* color = c->recommended() ? "#59a14f"
                          : c->excluded_by() == "deadline" ? "#f28e2b"
                                                           : "#e15759";
      chart.Segment(c->job_seconds_low() / u, c->cost_usd(), c->job_seconds_high() / u,
                    c->cost_usd(), color);
      chart.Segment(c->job_seconds() / u, c->cost_usd_low(), c->job_seconds() / u,
                    c->cost_usd_high(), color);
      chart.Point(c->job_seconds() / u, c->cost_usd(), color,
                  absl::StrFormat("%s x%d: %s (%s .. %s), $%.2f ($%.2f .. $%.2f)%s", c->gpu_model(),
                                  c->gpu_count(), InUnit(c->job_seconds(), unit),
                                  InUnit(c->job_seconds_low(), unit),
                                  InUnit(c->job_seconds_high(), unit),
                                  c->cost_usd(), c->cost_usd_low(), c->cost_usd_high(),
                                  c->recommended() ? "" : absl::StrCat(": ", c->reason())),
                  5, 0.9);
      chart.Label(c->job_seconds() / u, c->cost_usd(),
                  c->gpu_count() > 1 ? absl::StrCat(c->gpu_model(), " x", c->gpu_count())
                                     : c->gpu_model());
    }
    if (r.deadline_seconds() > 0) {
      chart.VerticalLine(r.deadline_seconds() / u, "#b03030", "deadline");
    }
    if (r.budget_usd() > 0) chart.HorizontalLine(r.budget_usd(), "#b03030", "budget");
    chart.Legend("recommended", "#59a14f");
    chart.Legend("misses the deadline", "#f28e2b");
    chart.Legend("other exclusion", "#e15759");
    html += chart.Render("predicted job time vs cost, with 10th..90th percentile intervals");
    html +=
        "<p class='note'>Bars: 10th..90th percentile of time (horizontal) and cost (vertical). "
        "Down and to the left is better.</p>";
  }

  html +=
      "<h2>Ranking</h2><table><tr><th>#</th><th class='l'>target</th><th>GPUs</th>"
      "<th class='l'>verdict</th><th>job time, " + std::string(unit.name) +
      " (10th..90th)</th><th>cost USD</th>"
      "<th>energy kWh</th><th class='l'>board power</th><th>memory needed / has</th></tr>";
  for (const v1::Candidate& c : r.candidates()) {
    const std::string verdict =
        c.recommended() ? "<span class='ok'>recommended</span>"
                        : absl::StrCat("<span class='no'>", HtmlEscape(c.excluded_by()), "</span>: ",
                                       HtmlEscape(c.reason()));
    std::string time = "-", cost = "-", energy = "-", power = "-";
    if (c.predicted()) {
      time = absl::StrCat(InUnit(c.job_seconds(), unit), " (", InUnit(c.job_seconds_low(), unit),
                          " .. ", InUnit(c.job_seconds_high(), unit), ")");
      if (c.priced()) {
        cost = absl::StrFormat("%.2f (%.2f .. %.2f)", c.cost_usd(), c.cost_usd_low(),
                               c.cost_usd_high());
      }
      if (c.board_power_w() > 0) {
        energy = absl::StrFormat("%.3g (%.3g .. %.3g)", c.energy_kwh(), c.energy_kwh_low(),
                                 c.energy_kwh_high());
      }
    }
    if (c.board_power_w() > 0) {
      power = absl::StrFormat("%.0f W: %s", c.board_power_w(), HtmlEscape(c.power_source()));
    }
    const std::string memory =
        c.memory().device_bytes() > 0
            ? absl::StrCat(GiB(c.memory().required_bytes()), " / ", GiB(c.memory().device_bytes()))
            : GiB(c.memory().required_bytes());
    absl::StrAppendFormat(&html,
                          "<tr><td>%d</td><td class='l'>%s%s</td><td>%d</td><td class='l'>%s</td>"
                          "<td>%s</td><td>%s</td><td>%s</td><td class='l'>%s</td><td>%s</td></tr>",
                          c.rank(), HtmlEscape(c.target()), c.registered_node() ? " (node)" : "",
                          c.gpu_count(), verdict, time, cost, energy, power, memory);
  }
  html += "</table>";

  html +=
      "<h2>Prices</h2><table><tr><th class='l'>GPU</th><th>USD per GPU-hour</th><th "
      "class='l'>kind</th><th class='l'>as of</th><th class='l'>provider and offer</th><th "
      "class='l'>source</th></tr>";
  std::set<std::string> seen;
  for (const v1::Candidate& c : r.candidates()) {
    if (!c.priced() || !seen.insert(c.price().gpu_model()).second) continue;
    const v1::GpuPrice& p = c.price();
    absl::StrAppendFormat(&html,
                          "<tr><td class='l'>%s</td><td>%.4g</td><td class='l'>%s</td><td "
                          "class='l'>%s</td><td class='l'>%s: %s</td><td class='l'>%s</td></tr>",
                          HtmlEscape(p.gpu_model()), p.usd_per_gpu_hour(), HtmlEscape(p.kind()),
                          HtmlEscape(p.as_of()), HtmlEscape(p.provider()), HtmlEscape(p.offer()),
                          HtmlEscape(p.source()));
  }
  html += "</table>";
  if (!r.notes().empty()) {
    html += "<h2>Notes</h2><ul>";
    for (const std::string& note : r.notes()) absl::StrAppend(&html, "<li>", HtmlEscape(note), "</li>");
    html += "</ul>";
  }
  return html + "</body></html>\n";
}

}  // namespace perfcast::client
