#include "client/table.h"

#include <algorithm>
#include <limits>

#include "absl/strings/string_view.h"

#include "client/text_input.h"

namespace perfcast::client {
namespace {

size_t Total(const std::vector<size_t>& width) {
  size_t total = 0;
  for (size_t w : width) total += w;
  return total + (width.empty() ? 0 : 2 * (width.size() - 1));
}

// Columns a cell takes: its UTF-8 code points (a layout's "·" is one).
size_t DisplayWidth(absl::string_view text) {
  size_t width = 0;
  for (char c : text) width += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return width;
}

// The byte offset `columns` code points after `start` (or the end).
size_t AdvanceColumns(const std::string& text, size_t start, size_t columns) {
  size_t at = start;
  while (at < text.size() && columns > 0) {
    ++at;
    while (at < text.size() && (static_cast<unsigned char>(text[at]) & 0xC0) == 0x80) ++at;
    --columns;
  }
  return at;
}

}  // namespace

std::vector<size_t> FitWidths(const std::vector<size_t>& natural, size_t max_width) {
  if (max_width == 0 || Total(natural) <= max_width) return natural;
  auto capped = [&](size_t cap) {
    std::vector<size_t> width = natural;
    for (size_t& w : width) w = std::min(w, std::max(cap, kMinWrapWidth));
    return width;
  };
  size_t cap = *std::max_element(natural.begin(), natural.end());
  while (cap > kMinWrapWidth && Total(capped(cap)) > max_width) --cap;
  return capped(cap);
}

std::vector<std::string> WrapCell(const std::string& text, size_t width) {
  std::vector<std::string> pieces;
  size_t start = 0;
  while (DisplayWidth(absl::string_view(text).substr(start)) > width) {
    size_t cut = AdvanceColumns(text, start, width);
    // After a space (dropped), or after a '-', ',' or '/' that fits.
    const size_t space = text.rfind(' ', cut);
    if (space != std::string::npos && space > start) {
      pieces.push_back(text.substr(start, space - start));
      start = space + 1;
      continue;
    }
    const size_t mark = text.find_last_of("-,/", cut - 1);
    if (mark != std::string::npos && mark >= start && mark + 1 - start < width + 1 &&
        mark > start) {
      pieces.push_back(text.substr(start, mark + 1 - start));
      start = mark + 1;
      continue;
    }
    while (cut > start + 1 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
    pieces.push_back(text.substr(start, cut - start));
    start = cut;
  }
  pieces.push_back(text.substr(start));
  return pieces;
}

void Table::AddRow(std::vector<std::string> row) {
  row.resize(header_.size());
  for (std::string& cell : row) cell = Printable(cell, std::numeric_limits<size_t>::max());
  rows_.push_back(std::move(row));
}

void Table::Print(std::ostream& out, size_t max_width) const {
  std::vector<size_t> width = FitWidths(Widths(), max_width);
  Line(out, width, header_);
  for (const auto& row : rows_) Line(out, width, row);
}

void Table::Flush(std::ostream& out, size_t max_width) {
  std::vector<size_t> width = Widths();
  for (size_t c = 0; c < width.size() && c < flushed_width_.size(); ++c) {
    width[c] = std::max(width[c], flushed_width_[c]);
  }
  const std::vector<size_t> fitted = FitWidths(width, max_width);
  if (flushed_width_.empty()) Line(out, fitted, header_);
  for (const auto& row : rows_) Line(out, fitted, row);
  rows_.clear();
  flushed_width_ = std::move(width);
}

std::vector<size_t> Table::Widths() const {
  std::vector<size_t> width(header_.size());
  for (size_t c = 0; c < header_.size(); ++c) {
    width[c] = DisplayWidth(header_[c]);
    for (const auto& row : rows_) width[c] = std::max(width[c], DisplayWidth(row[c]));
  }
  return width;
}

void Table::Line(std::ostream& out, const std::vector<size_t>& width,
                 const std::vector<std::string>& cells) const {
  std::vector<std::vector<std::string>> pieces;
  size_t lines = 1;
  for (size_t c = 0; c < cells.size(); ++c) {
    pieces.push_back(WrapCell(cells[c], width[c]));
    lines = std::max(lines, pieces.back().size());
  }
  for (size_t l = 0; l < lines; ++l) {
    std::string text;
    for (size_t c = 0; c < cells.size(); ++c) {
      const std::string piece = l < pieces[c].size() ? pieces[c][l] : "";
      text += piece;
      if (c + 1 < cells.size()) {
        text.append(width[c] - std::min(width[c], DisplayWidth(piece)) + 2, ' ');
      }
    }
    // Wrapped lines end where their last piece does.
    while (!text.empty() && text.back() == ' ' && l > 0) text.pop_back();
    out << text << "\n";
  }
}

}  // namespace perfcast::client
