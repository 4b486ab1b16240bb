// Plain-text tables for CLI output: columns padded to their widest cell.
// Cells quote names and messages from files, requests and the server: each
// is shown with control characters and invalid UTF-8 escaped (Printable), so
// that a table cannot drive the terminal.
//
// Given a width (a terminal's, ClientContext::TableWidth), a table wider than
// it narrows its widest columns and wraps their cells over several lines,
// at spaces where it can; 0 never wraps (--wide, or output to a pipe).
#ifndef PERFCAST_CLIENT_TABLE_H_
#define PERFCAST_CLIENT_TABLE_H_

#include <cstddef>
#include <ostream>
#include <string>
#include <vector>

namespace perfcast::client {

class Table {
 public:
  explicit Table(std::vector<std::string> header) : header_(std::move(header)) {}

  void AddRow(std::vector<std::string> row);

  // Prints the header and every row within `max_width` columns (0: no limit).
  void Print(std::ostream& out, size_t max_width = 0) const;

  // For output that streams: prints the rows added since the last call (the
  // header before the first) and forgets them, so that memory holds one
  // batch of rows. Columns keep the widest cell printed so far.
  void Flush(std::ostream& out, size_t max_width = 0);

 private:
  std::vector<size_t> Widths() const;
  void Line(std::ostream& out, const std::vector<size_t>& width,
            const std::vector<std::string>& cells) const;

  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
  std::vector<size_t> flushed_width_;  // empty until the first Flush
};

// The column widths that fit `natural` (each column's widest cell) into
// `max_width` with two spaces between columns: the widest columns narrowed
// to a common cap, none below kMinWrapWidth (or its natural width); the
// natural widths when they fit or `max_width` is 0.
inline constexpr size_t kMinWrapWidth = 8;
std::vector<size_t> FitWidths(const std::vector<size_t>& natural, size_t max_width);

// `text` cut into pieces of at most `width` bytes: at a space (dropped) or
// after a '-', ',' or '/' where one falls in the piece, else anywhere but
// inside a UTF-8 sequence.
std::vector<std::string> WrapCell(const std::string& text, size_t width);

}  // namespace perfcast::client

#endif  // PERFCAST_CLIENT_TABLE_H_
