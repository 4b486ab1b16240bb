// Plain-text tables for CLI output: columns padded to their widest cell.
// Cells quote names and messages from files, requests and the server: each
// is shown with control characters and invalid UTF-8 escaped (Printable), so
// that a table cannot drive the terminal.
#ifndef PERFCAST_CLIENT_TABLE_H_
#define PERFCAST_CLIENT_TABLE_H_

#include <algorithm>
#include <limits>
#include <ostream>
#include <string>
#include <vector>

#include "client/text_input.h"

namespace perfcast::client {

class Table {
 public:
  explicit Table(std::vector<std::string> header) : header_(std::move(header)) {}

  void AddRow(std::vector<std::string> row) {
    row.resize(header_.size());
    for (std::string& cell : row) cell = Printable(cell, std::numeric_limits<size_t>::max());
    rows_.push_back(std::move(row));
  }

  void Print(std::ostream& out) const {
    std::vector<size_t> width = Widths();
    Line(out, width, header_);
    for (const auto& row : rows_) Line(out, width, row);
  }

  // For output that streams: prints the rows added since the last call (the
  // header before the first) and forgets them, so that memory holds one
  // batch of rows. Columns keep the widest cell printed so far.
  void Flush(std::ostream& out) {
    std::vector<size_t> width = Widths();
    for (size_t c = 0; c < width.size() && c < flushed_width_.size(); ++c) {
      width[c] = std::max(width[c], flushed_width_[c]);
    }
    if (flushed_width_.empty()) Line(out, width, header_);
    for (const auto& row : rows_) Line(out, width, row);
    rows_.clear();
    flushed_width_ = std::move(width);
  }

 private:
  std::vector<size_t> Widths() const {
    std::vector<size_t> width(header_.size());
    for (size_t c = 0; c < header_.size(); ++c) {
      width[c] = header_[c].size();
      for (const auto& row : rows_) width[c] = std::max(width[c], row[c].size());
    }
    return width;
  }

  static void Line(std::ostream& out, const std::vector<size_t>& width,
                   const std::vector<std::string>& cells) {
    std::string text;
    for (size_t c = 0; c < cells.size(); ++c) {
      text += cells[c];
      if (c + 1 < cells.size()) text.append(width[c] - cells[c].size() + 2, ' ');
    }
    out << text << "\n";
  }

  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
  std::vector<size_t> flushed_width_;  // empty until the first Flush
};

}  // namespace perfcast::client

#endif  // PERFCAST_CLIENT_TABLE_H_
