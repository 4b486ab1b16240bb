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
    std::vector<size_t> width(header_.size());
    for (size_t c = 0; c < header_.size(); ++c) {
      width[c] = header_[c].size();
      for (const auto& row : rows_) width[c] = std::max(width[c], row[c].size());
    }
    auto line = [&](const std::vector<std::string>& cells) {
      std::string text;
      for (size_t c = 0; c < cells.size(); ++c) {
        text += cells[c];
        if (c + 1 < cells.size()) text.append(width[c] - cells[c].size() + 2, ' ');
      }
      out << text << "\n";
    };
    line(header_);
    for (const auto& row : rows_) line(row);
  }

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace perfcast::client

#endif  // PERFCAST_CLIENT_TABLE_H_
