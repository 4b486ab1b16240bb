#include "client/svg_chart.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace perfcast::client {

std::string HtmlEscape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '&': out += "&amp;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out.push_back(c);
    }
  }
  return out;
}

const char* PaletteColor(size_t index) {
  // Tableau 10: distinguishable, and readable in grey print.
  static const char* const kColors[] = {"#4e79a7", "#e15759", "#59a14f", "#f28e2b", "#b07aa1",
                                        "#76b7b2", "#edc948", "#ff9da7", "#9c755f", "#bab0ac"};
  return kColors[index % 10];
}

Axis::Axis(double lo, double hi, bool log, std::string label)
    : lo_(lo), hi_(hi), log_(log), label_(std::move(label)) {
  if (!std::isfinite(lo_) || !std::isfinite(hi_)) lo_ = hi_ = log_ ? 1 : 0;
  if (log_) {
    // A margin of a quarter on each side, so no mark sits on the frame.
    lo_ = std::max(lo_, 1e-12) / 1.25;
    hi_ = std::max(hi_ * 1.25, lo_ * 2);
  } else {
    if (hi_ <= lo_) {
      const double pad = lo_ == 0 ? 1 : std::abs(lo_) * 0.1;
      lo_ -= pad;
      hi_ += pad;
    }
    const double pad = (hi_ - lo_) * 0.04;
    lo_ -= pad;
    hi_ += pad;
  }
}

double Axis::Unit(double value) const {
  double u = log_ ? (std::log10(std::max(value, 1e-300)) - std::log10(lo_)) /
                        (std::log10(hi_) - std::log10(lo_))
                  : (value - lo_) / (hi_ - lo_);
  return std::clamp(u, 0.0, 1.0);
}

std::vector<double> Axis::Ticks() const {
  std::vector<double> ticks;
  if (log_) {
    // Decades when the range spans many; 1-2-5 steps, or every digit, when
    // it spans few.
    const int first = static_cast<int>(std::floor(std::log10(lo_)));
    const int last = static_cast<int>(std::ceil(std::log10(hi_)));
    const int step = std::max(1, (last - first) / 8);
    for (const std::vector<double>& mantissas :
         {std::vector<double>{1}, {1, 2, 5}, {1, 2, 3, 4, 5, 6, 7, 8, 9}}) {
      ticks.clear();
      for (int d = first; d <= last; d += step) {
        for (double m : mantissas) {
          const double t = m * std::pow(10, d);
          if (t >= lo_ && t <= hi_) ticks.push_back(t);
        }
      }
      if (ticks.size() >= 3) break;
    }
    return ticks;
  }
  const double raw = (hi_ - lo_) / 6;
  const double magnitude = std::pow(10, std::floor(std::log10(raw)));
  double step = magnitude;
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (m * magnitude >= raw) {
      step = m * magnitude;
      break;
    }
  }
  for (double t = std::ceil(lo_ / step) * step; t <= hi_ + step * 1e-9; t += step) {
    ticks.push_back(std::abs(t) < step * 1e-9 ? 0 : t);
  }
  return ticks;
}

std::string Axis::TickLabel(double v) const {
  const double a = std::abs(v);
  if (a == 0) return "0";
  if (a >= 1e6 || a < 1e-3) return absl::StrFormat("%.0e", v);
  if (a >= 100) return absl::StrFormat("%.0f", v);
  if (a >= 1) return absl::StrFormat("%.3g", v);
  return absl::StrFormat("%.2g", v);
}

SvgChart::SvgChart(int width, int height, Axis x, Axis y)
    : width_(width), height_(height), x_(std::move(x)), y_(std::move(y)) {}

void SvgChart::SetLeftMargin(int pixels) { left_ = pixels; }

double SvgChart::X(double v) const { return left_ + x_.Unit(v) * (width_ - left_ - right_); }
double SvgChart::Y(double v) const {
  return top_ + (1 - y_.Unit(v)) * (height_ - top_ - bottom_);
}

void SvgChart::Point(double x, double y, const char* color, const std::string& title, double r,
                     double opacity) {
  absl::StrAppendFormat(&marks_svg_,
                        "<circle class='mark' cx='%.1f' cy='%.1f' r='%.1f' fill='%s' "
                        "fill-opacity='%.2f'><title>%s</title></circle>",
                        X(x), Y(y), r, color, opacity, HtmlEscape(title));
  ++marks_;
}

void SvgChart::Segment(double x0, double y0, double x1, double y1, const char* color,
                       double width) {
  absl::StrAppendFormat(&marks_svg_,
                        "<line class='mark' x1='%.1f' y1='%.1f' x2='%.1f' y2='%.1f' stroke='%s' "
                        "stroke-width='%.1f' stroke-opacity='0.7'/>",
                        X(x0), Y(y0), X(x1), Y(y1), color, width);
  ++marks_;
}

void SvgChart::Bar(double x0, double x1, int row, int rows, const char* color,
                   const std::string& title) {
  category_rows_ = true;
  const double band = static_cast<double>(height_ - top_ - bottom_) / std::max(rows, 1);
  const double a = std::min(X(x0), X(x1)), b = std::max(X(x0), X(x1));
  absl::StrAppendFormat(&marks_svg_,
                        "<rect class='mark' x='%.1f' y='%.1f' width='%.1f' height='%.1f' "
                        "fill='%s'><title>%s</title></rect>",
                        a, top_ + row * band + band * 0.2, std::max(b - a, 1.0), band * 0.6, color,
                        HtmlEscape(title));
  ++marks_;
}

void SvgChart::RowWhisker(double x0, double x1, int row, int rows, const char* color) {
  category_rows_ = true;
  const double band = static_cast<double>(height_ - top_ - bottom_) / std::max(rows, 1);
  const double y = top_ + (row + 0.5) * band;
  absl::StrAppendFormat(&marks_svg_,
                        "<path class='mark' d='M%.1f %.1fV%.1fM%.1f %.1fH%.1fM%.1f %.1fV%.1f' "
                        "stroke='%s' stroke-width='1.2' fill='none'/>",
                        X(x0), y - 5, y + 5, X(x0), y, X(x1), X(x1), y - 5, y + 5, color);
  ++marks_;
}

void SvgChart::VerticalLine(double x, const char* color, const std::string& label) {
  absl::StrAppendFormat(&overlay_svg_,
                        "<line x1='%.1f' y1='%d' x2='%.1f' y2='%d' stroke='%s' "
                        "stroke-dasharray='5 3'/><text x='%.1f' y='%d' fill='%s'>%s</text>",
                        X(x), top_, X(x), height_ - bottom_, color, X(x) + 3, top_ + 12, color,
                        HtmlEscape(label));
}

void SvgChart::HorizontalLine(double y, const char* color, const std::string& label) {
  absl::StrAppendFormat(&overlay_svg_,
                        "<line x1='%d' y1='%.1f' x2='%d' y2='%.1f' stroke='%s' "
                        "stroke-dasharray='5 3'/><text x='%d' y='%.1f' fill='%s' "
                        "text-anchor='end'>%s</text>",
                        left_, Y(y), width_ - right_, Y(y), color, width_ - right_ - 3, Y(y) - 3,
                        color, HtmlEscape(label));
}

void SvgChart::Diagonal(const char* color) {
  // y = x over the part of the plot where both axes share values.
  absl::StrAppendFormat(&overlay_svg_,
                        "<line x1='%d' y1='%d' x2='%d' y2='%d' stroke='%s' "
                        "stroke-dasharray='4 4'/>",
                        left_, height_ - bottom_, width_ - right_, top_, color);
}

bool SvgChart::Label(double x, double y, const std::string& text, const char* color) {
  // An upper bound of sans-serif text at font-size 11: 7.5 pixels a
  // character, 11 high with the descenders, and a pixel of air around.
  const double w = 7.5 * text.size() + 2;
  const double px = X(x), py = Y(y);
  for (int step = 0; step < 8; ++step) {
    for (const double dy : {-4.0 - 12 * step, 13.0 + 12 * step}) {
      for (const bool right : {true, false}) {
        const double x0 = right ? px + 5 : px - 5 - w;
        const Box box{x0 - 1, py + dy - 11, x0 + w, py + dy + 2};
        if (box.x0 < 0 || box.x1 > width_ || box.y0 < 0 || box.y1 > height_) continue;
        bool free = true;
        for (const Box& other : label_boxes_) {
          free = free && (box.x1 <= other.x0 || other.x1 <= box.x0 || box.y1 <= other.y0 ||
                          other.y1 <= box.y0);
        }
        if (!free) continue;
        label_boxes_.push_back(box);
        absl::StrAppendFormat(&overlay_svg_,
                              "<text class='label' x='%.1f' y='%.1f' fill='%s'>%s</text>", x0,
                              py + dy, color, HtmlEscape(text));
        return true;
      }
    }
  }
  return false;
}

void SvgChart::RowLabels(const std::vector<std::string>& labels) {
  const double band =
      static_cast<double>(height_ - top_ - bottom_) / std::max<size_t>(labels.size(), 1);
  for (size_t i = 0; i < labels.size(); ++i) {
    absl::StrAppendFormat(&overlay_svg_, "<text x='%d' y='%.1f' text-anchor='end'>%s</text>",
                          left_ - 6, top_ + (i + 0.5) * band + 4, HtmlEscape(labels[i]));
  }
}

void SvgChart::Legend(const std::string& text, const char* color) {
  const int y = top_ + 8 + 16 * legend_entries_++;
  absl::StrAppendFormat(&overlay_svg_,
                        "<rect x='%d' y='%d' width='10' height='10' fill='%s'/>"
                        "<text x='%d' y='%d'>%s</text>",
                        width_ - right_ + 12, y - 8, color, width_ - right_ + 27, y + 1,
                        HtmlEscape(text));
}

std::string SvgChart::Render(const std::string& title) const {
  const int plot_w = width_ - left_ - right_, plot_h = height_ - top_ - bottom_;
  std::string svg = absl::StrFormat(
      "<svg xmlns='http://www.w3.org/2000/svg' class='chart' role='img' aria-label='%s' "
      "data-marks='%d' width='%d' height='%d' viewBox='0 0 %d %d' font-family='sans-serif' "
      "font-size='11'><rect x='%d' y='%d' width='%d' height='%d' fill='#fcfcfc' stroke='#999'/>",
      HtmlEscape(title), marks_, width_, height_, width_, height_, left_, top_, plot_w, plot_h);
  for (double t : x_.Ticks()) {
    absl::StrAppendFormat(&svg,
                          "<line x1='%.1f' y1='%d' x2='%.1f' y2='%d' stroke='#e4e4e4'/>"
                          "<text x='%.1f' y='%d' text-anchor='middle'>%s</text>",
                          X(t), top_, X(t), top_ + plot_h, X(t), top_ + plot_h + 14,
                          x_.TickLabel(t));
  }
  if (!category_rows_) {
    for (double t : y_.Ticks()) {
      absl::StrAppendFormat(&svg,
                            "<line x1='%d' y1='%.1f' x2='%d' y2='%.1f' stroke='#e4e4e4'/>"
                            "<text x='%d' y='%.1f' text-anchor='end'>%s</text>",
                            left_, Y(t), left_ + plot_w, Y(t), left_ - 4, Y(t) + 4,
                            y_.TickLabel(t));
    }
  }
  absl::StrAppendFormat(&svg, "<text x='%d' y='%d' text-anchor='middle'>%s</text>",
                        left_ + plot_w / 2, height_ - 12, HtmlEscape(x_.label()));
  if (!category_rows_) {
    absl::StrAppendFormat(
        &svg, "<text x='14' y='%d' text-anchor='middle' transform='rotate(-90 14 %d)'>%s</text>",
        top_ + plot_h / 2, top_ + plot_h / 2, HtmlEscape(y_.label()));
  }
  return absl::StrCat(svg, marks_svg_, overlay_svg_, "</svg>");
}

}  // namespace perfcast::client
