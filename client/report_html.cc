#include "client/report_html.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace perfcast::client {
namespace {

std::string Escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '&': out += "&amp;"; break;
      case '"': out += "&quot;"; break;
      default: out.push_back(c);
    }
  }
  return out;
}

const char* kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"};

// Predicted against measured, both on log axes, one colour per GPU.
std::string Scatter(const v1::EvaluateResponse& e, int level) {
  std::vector<const v1::EvaluatedPoint*> points;
  for (const auto& p : e.points()) {
    if (p.level() == level && p.measured_ms() > 0 && p.predicted_ms() > 0) points.push_back(&p);
  }
  if (points.empty()) return "<p>No points.</p>";
  double lo = 1e300, hi = 0;
  for (auto* p : points) {
    lo = std::min({lo, p->measured_ms(), p->predicted_ms()});
    hi = std::max({hi, p->measured_ms(), p->predicted_ms()});
  }
  const double l0 = std::floor(std::log10(lo)), l1 = std::ceil(std::log10(hi));
  const int size = 420, pad = 50;
  auto x = [&](double v) { return pad + (std::log10(v) - l0) / (l1 - l0) * size; };
  auto y = [&](double v) { return pad + size - (std::log10(v) - l0) / (l1 - l0) * size; };
  std::vector<std::string> gpus;
  std::string svg = absl::StrFormat(
      "<svg xmlns='http://www.w3.org/2000/svg' width='%d' height='%d' font-size='11'>"
      "<rect x='%d' y='%d' width='%d' height='%d' fill='none' stroke='#999'/>"
      "<line x1='%f' y1='%f' x2='%f' y2='%f' stroke='#999' stroke-dasharray='4'/>",
      size + 2 * pad + 140, size + 2 * pad, pad, pad, size, size, x(std::pow(10, l0)),
      y(std::pow(10, l0)), x(std::pow(10, l1)), y(std::pow(10, l1)));
  for (double d = l0; d <= l1; ++d) {
    absl::StrAppendFormat(&svg,
                          "<text x='%f' y='%d' text-anchor='middle'>1e%g</text>"
                          "<text x='%d' y='%f' text-anchor='end'>1e%g</text>",
                          x(std::pow(10, d)), pad + size + 15, d, pad - 4, y(std::pow(10, d)) + 4, d);
  }
  const size_t stride = std::max<size_t>(1, points.size() / 4000);
  for (size_t i = 0; i < points.size(); i += stride) {
    const v1::EvaluatedPoint& p = *points[i];
    auto it = std::find(gpus.begin(), gpus.end(), p.gpu_model());
    if (it == gpus.end()) it = gpus.insert(gpus.end(), p.gpu_model());
    const char* color = kColors[(it - gpus.begin()) % 6];
    absl::StrAppendFormat(&svg, "<circle cx='%.1f' cy='%.1f' r='2' fill='%s' fill-opacity='0.5'/>",
                          x(p.measured_ms()), y(p.predicted_ms()), color);
  }
  for (size_t g = 0; g < gpus.size(); ++g) {
    absl::StrAppendFormat(&svg, "<circle cx='%d' cy='%d' r='4' fill='%s'/><text x='%d' y='%d'>%s</text>",
                          size + pad + 15, pad + 10 + 16 * static_cast<int>(g), kColors[g % 6],
                          size + pad + 25, pad + 14 + 16 * static_cast<int>(g), Escape(gpus[g]));
  }
  absl::StrAppendFormat(&svg,
                        "<text x='%d' y='%d' text-anchor='middle'>measured ms</text>"
                        "<text x='12' y='%d' transform='rotate(-90 12 %d)' text-anchor='middle'>predicted ms</text></svg>",
                        pad + size / 2, pad + size + 35, pad + size / 2, pad + size / 2);
  return svg;
}

std::string Bars(const google::protobuf::RepeatedPtrField<v1::GroupError>& groups) {
  if (groups.empty()) return "<p>No groups.</p>";
  double top = 0.05;
  for (const auto& g : groups) top = std::max(top, g.mape());
  const int width = 360, row = 22;
  std::string svg = absl::StrFormat("<svg xmlns='http://www.w3.org/2000/svg' width='%d' height='%d' font-size='11'>",
                                    width + 260, row * groups.size() + 10);
  int i = 0;
  for (const auto& g : groups) {
    absl::StrAppendFormat(&svg,
                          "<text x='150' y='%d' text-anchor='end'>%s</text>"
                          "<rect x='155' y='%d' width='%.1f' height='14' fill='#1f77b4'/>"
                          "<text x='%.1f' y='%d'>%.1f%% (%d rows)</text>",
                          i * row + 16, Escape(g.group()), i * row + 5, g.mape() / top * width,
                          160 + g.mape() / top * width, i * row + 16, 100 * g.mape(), g.rows());
    ++i;
  }
  return svg + "</svg>";
}

std::string GroupTable(const std::string& title,
                       const google::protobuf::RepeatedPtrField<v1::GroupError>& groups) {
  std::string html = absl::StrCat("<h3>", title, "</h3><table><tr><th>group</th><th>MAPE</th><th>rows</th></tr>");
  for (const auto& g : groups) {
    absl::StrAppendFormat(&html, "<tr><td>%s</td><td>%.1f%%</td><td>%d</td></tr>", Escape(g.group()),
                          100 * g.mape(), g.rows());
  }
  return html + "</table>";
}

}  // namespace

std::string RenderEvaluationHtml(const v1::EvaluateResponse& e, const std::string& split) {
  std::string html =
      "<!DOCTYPE html><html><head><meta charset='utf-8'><title>perfcast evaluation</title>"
      "<style>body{font-family:sans-serif;margin:2em;max-width:1100px}table{border-collapse:collapse}"
      "td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}pre{white-space:pre-wrap;"
      "background:#f6f6f6;padding:1em}</style></head><body>";
  absl::StrAppendFormat(&html,
                        "<h1>perfcast evaluation</h1><p>Split: <b>%s</b>. Level 1 (operation classes) "
                        "MAPE <b>%.1f%%</b>; level 2 (whole workloads) MAPE <b>%.1f%%</b>; %d points.</p>",
                        Escape(split), 100 * e.level1_mape(), 100 * e.level2_mape(), e.points_size());
  html += "<h2>Predicted vs measured, whole workloads (level 2)</h2>" + Scatter(e, 2);
  html += "<h2>Predicted vs measured, operations (level 1)</h2>" + Scatter(e, 1);
  html += "<h2>Error per GPU</h2>" + Bars(e.per_gpu());
  html += GroupTable("Error per model family", e.per_family());
  html += GroupTable("Error per precision", e.per_precision());
  html += "<h2>Full report</h2><pre>" + Escape(e.report_json()) + "</pre></body></html>\n";
  return html;
}

}  // namespace perfcast::client
