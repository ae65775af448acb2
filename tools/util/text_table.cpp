#include "util/text_table.hpp"

#include <algorithm>

#include "util/text.hpp"

namespace mallard::tool {

namespace {

// Display width: UTF-8 continuation bytes take no column.
std::size_t display_width(const std::string& text) {
  return static_cast<std::size_t>(std::count_if(text.begin(), text.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

std::string pad(const std::string& text, std::size_t width, bool left) {
  std::size_t current = display_width(text);
  std::string fill(width > current ? width - current : 0, ' ');
  return left ? text + fill : fill + text;
}

}  // namespace

std::string TextTable::plain(const std::string& indent) const {
  std::vector<std::size_t> widths(header_.size(), 0);
  for (std::size_t c = 0; c < header_.size(); ++c) widths[c] = display_width(header_[c]);
  for (const auto& row : rows_) {
    for (std::size_t c = 0; c < row.size() && c < widths.size(); ++c) widths[c] = std::max(widths[c], display_width(row[c]));
  }
  auto render_row = [&](const std::vector<std::string>& row) {
    std::string line = indent;
    for (std::size_t c = 0; c < widths.size(); ++c) {
      if (c > 0) line += "  ";
      line += pad(c < row.size() ? row[c] : "", widths[c], c == 0);
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    return line + "\n";
  };
  std::size_t total = 0;
  for (auto width : widths) total += width + 2;
  std::string out = render_row(header_);
  for (const auto& row : rows_) out += row.empty() ? indent + std::string(total > 2 ? total - 2 : 0, '-') + "\n" : render_row(row);
  return out;
}

std::string TextTable::markdown() const {
  auto escape = [](const std::string& text) {
    std::string out;
    for (char c : text) {
      if (c == '|') out += "\\|";
      else out += c;
    }
    return out;
  };
  // Cells are appended piece by piece: GCC 12 warns (-Wrestrict, a false
  // positive) on "literal" + std::string temporaries here.
  auto append_cell = [&](std::string& out, const std::string& cell) {
    out += ' ';
    out += escape(cell);
    out += " |";
  };
  std::string out = "|";
  for (const auto& cell : header_) append_cell(out, cell);
  out += "\n|";
  for (std::size_t c = 0; c < header_.size(); ++c) out += c == 0 ? " :--- |" : " ---: |";
  out += "\n";
  for (const auto& row : rows_) {
    if (row.empty()) continue;
    out += "|";
    for (std::size_t c = 0; c < header_.size(); ++c) append_cell(out, c < row.size() ? row[c] : std::string());
    out += "\n";
  }
  return out;
}

std::string TextTable::html(const std::string& css_class) const {
  std::string out = css_class.empty() ? "<table>\n<tr>" : "<table class=\"" + css_class + "\">\n<tr>";
  for (const auto& cell : header_) out += "<th>" + escape_markup(cell) + "</th>";
  out += "</tr>\n";
  for (const auto& row : rows_) {
    if (row.empty()) continue;
    out += "<tr>";
    for (std::size_t c = 0; c < header_.size(); ++c) out += (c == 0 ? "<td>" : "<td class=\"n\">") + escape_markup(c < row.size() ? row[c] : "") + "</td>";
    out += "</tr>\n";
  }
  return out + "</table>\n";
}

}  // namespace mallard::tool
