// A table of strings rendered as aligned plain text (terminal, report.txt)
// or as a Markdown table (BENCHMARKS.md). The first column is left-aligned,
// the others right-aligned, as numbers read best.
#pragma once

#include <string>
#include <vector>

namespace mallard::tool {

class TextTable {
 public:
  explicit TextTable(std::vector<std::string> header) : header_(std::move(header)) {}
  void add_row(std::vector<std::string> cells) { rows_.push_back(std::move(cells)); }
  // A row drawn as a rule of dashes in plain text (skipped in Markdown).
  void add_separator() { rows_.push_back({}); }
  std::string plain(const std::string& indent = "") const;
  std::string markdown() const;
  // An HTML <table>; cells are escaped.
  std::string html(const std::string& css_class = "") const;

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace mallard::tool
