// A small SVG chart builder for the HTML reports: linear or log axes with
// ticks, grid and labels, and marks (points, interval bars, bars, reference
// lines) in a self-contained <svg> element, no scripts. Every data mark
// carries class "mark" and the chart counts them in data-marks, so that a
// test (or a browser) can tell an empty chart from a drawn one.
#ifndef PERFCAST_CLIENT_SVG_CHART_H_
#define PERFCAST_CLIENT_SVG_CHART_H_

#include <string>
#include <vector>

namespace perfcast::client {

// Escapes text for HTML and SVG content and attributes.
std::string HtmlEscape(const std::string& text);

// A categorical colour; the same index gives the same colour everywhere.
const char* PaletteColor(size_t index);

class Axis {
 public:
  // A log axis needs lo > 0. Degenerate ranges are widened.
  Axis(double lo, double hi, bool log, std::string label);
  // Maps a value to [0, 1] along the axis (clamped).
  double Unit(double value) const;
  std::vector<double> Ticks() const;
  std::string TickLabel(double value) const;
  const std::string& label() const { return label_; }

 private:
  double lo_, hi_;
  bool log_;
  std::string label_;
};

class SvgChart {
 public:
  SvgChart(int width, int height, Axis x, Axis y);

  // A point; `title` shows as a tooltip.
  void Point(double x, double y, const char* color, const std::string& title, double r = 3,
             double opacity = 0.6);
  // A line segment in data coordinates (interval bars, whiskers).
  void Segment(double x0, double y0, double x1, double y1, const char* color, double width = 1.5);
  // A horizontal bar from x0 to x1 at category row `row` of `rows` (y axis
  // unused): for bar charts with labels on the left.
  void Bar(double x0, double x1, int row, int rows, const char* color, const std::string& title);
  // A whisker from x0 to x1 across the middle of category row `row`.
  void RowWhisker(double x0, double x1, int row, int rows, const char* color);
  // Reference lines across the plot, labelled (not counted as marks).
  void VerticalLine(double x, const char* color, const std::string& label);
  void HorizontalLine(double y, const char* color, const std::string& label);
  void Diagonal(const char* color);  // y = x
  // A text label beside the point at data coordinates, placed where it
  // overlaps no label placed before (right or left of the point, above or
  // below, then further away); left out when no such place is near, since
  // the point's tooltip names it too. Returns whether it was drawn.
  bool Label(double x, double y, const std::string& text, const char* color = "#333");
  // Category labels on the left, for Bar charts.
  void RowLabels(const std::vector<std::string>& labels);
  // A legend entry at the right of the plot.
  void Legend(const std::string& text, const char* color);

  // Room for long category labels (the default is 70 pixels).
  void SetLeftMargin(int pixels);

  int marks() const { return marks_; }
  // The <svg> element. `title` is its accessible name.
  std::string Render(const std::string& title) const;

 private:
  double X(double v) const;
  double Y(double v) const;

  int width_, height_;
  int left_ = 70, right_ = 170, top_ = 20, bottom_ = 50;
  Axis x_, y_;
  bool category_rows_ = false;
  std::string marks_svg_, overlay_svg_;
  struct Box {
    double x0, y0, x1, y1;
  };
  std::vector<Box> label_boxes_;  // where Label drew, in pixels
  int marks_ = 0;
  int legend_entries_ = 0;
};

}  // namespace perfcast::client

#endif  // PERFCAST_CLIENT_SVG_CHART_H_
