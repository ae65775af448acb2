// SVG charts, drawn by hand so the report needs no library and no network.
// Bar charts are small multiples: a workload's cases differ in throughput by
// orders of magnitude (4k vs 1m blocks), so each case gets its own panel and
// scale, and bars within a panel compare allocators.
#include <algorithm>
#include <cmath>
#include <functional>

#include "report/writers.hpp"
#include "util/text.hpp"

namespace mallard::tool {

namespace {

const char* color_of(const std::string& allocator, std::size_t index) {
  static const std::vector<std::pair<std::string, const char*>> fixed = {
      {"glibc", "#7f7f7f"}, {"jemalloc", "#1f77b4"}, {"tcmalloc", "#ff7f0e"},
      {"mimalloc", "#2ca02c"}, {"tbbmalloc", "#9467bd"}, {"mallard", "#d62728"},
  };
  for (const auto& [name, color] : fixed) {
    if (name == allocator) return color;
  }
  static const char* extra[] = {"#8c564b", "#e377c2", "#17becf", "#bcbd22"};
  return extra[index % 4];
}

// The smallest of 1, 2, 2.5, 5 x 10^k at or above the value: axis tops people can read.
double nice_ceiling(double value) {
  if (!(value > 0)) return 1;
  double power = std::pow(10.0, std::floor(std::log10(value)));
  for (double step : {1.0, 2.0, 2.5, 5.0, 10.0}) {
    if (step * power >= value * (1 - 1e-9)) return step * power;
  }
  return 10 * power;
}

std::string text_at(double x, double y, const std::string& text, const char* anchor = "middle", int size = 11, const char* extra = "") {
  return strprintf("<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\" font-size=\"%d\"%s>%s</text>\n", x, y, anchor, size, extra,
                   escape_markup(text).c_str());
}

std::string legend(const std::vector<std::string>& allocators, double x, double y) {
  std::string out;
  for (std::size_t a = 0; a < allocators.size(); ++a) {
    double left = x + static_cast<double>(a) * 95;
    out += strprintf("<rect x=\"%.1f\" y=\"%.1f\" width=\"12\" height=\"12\" fill=\"%s\"/>\n", left, y - 10, color_of(allocators[a], a));
    out += text_at(left + 16, y, allocators[a], "start");
  }
  return out;
}

struct BarValue {
  bool present;
  double median, min, max;
};

struct Panel {
  std::string title;
  std::vector<BarValue> bars;  // per allocator
};

std::string bar_panels(const std::string& title, const std::vector<std::string>& allocators, const std::vector<Panel>& panels,
                       const std::function<std::string(double)>& format_value) {
  const double bar_width = 22, gap = 6, left_margin = 58, panel_height = 190, top = 44;
  const double panel_width = left_margin + static_cast<double>(allocators.size()) * (bar_width + gap) + 16;
  const std::size_t columns = std::min<std::size_t>(std::max<std::size_t>(panels.size(), 1), 4);
  const std::size_t rows = (panels.size() + columns - 1) / columns;
  // Wide enough for the panels, the legend and the title (about 8.5 px a
  // character at 14 px bold).
  const double width = std::max({panel_width * static_cast<double>(columns), 95.0 * static_cast<double>(allocators.size()) + 20,
                                 8.5 * static_cast<double>(title.size()) + 16});
  const double height = top + static_cast<double>(rows) * (panel_height + 30) + 10;

  std::string svg = strprintf(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" "
      "font-family=\"sans-serif\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
      width, height, width, height);
  svg += text_at(8, 18, title, "start", 14, " font-weight=\"bold\"");
  svg += legend(allocators, 8, 38);
  for (std::size_t p = 0; p < panels.size(); ++p) {
    const Panel& panel = panels[p];
    double origin_x = static_cast<double>(p % columns) * panel_width;
    double origin_y = top + static_cast<double>(p / columns) * (panel_height + 30) + 20;
    double plot_top = origin_y + 18, plot_bottom = origin_y + panel_height - 10;
    double highest = 0;
    for (const auto& bar : panel.bars) {
      if (bar.present) highest = std::max(highest, bar.max);
    }
    double axis_top = nice_ceiling(highest);
    auto y_of = [&](double value) { return plot_bottom - (plot_bottom - plot_top) * value / axis_top; };
    svg += text_at(origin_x + panel_width / 2, origin_y + 8, panel.title, "middle", 12, " font-weight=\"bold\"");
    for (int tick = 0; tick <= 4; ++tick) {
      double value = axis_top * tick / 4;
      double y = y_of(value);
      svg += strprintf("<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n", origin_x + left_margin, y,
                       origin_x + panel_width - 10, y);
      svg += text_at(origin_x + left_margin - 4, y + 4, tick == 0 ? std::string("0") : format_value(value), "end", 10);
    }
    for (std::size_t a = 0; a < panel.bars.size(); ++a) {
      const BarValue& bar = panel.bars[a];
      double x = origin_x + left_margin + gap + static_cast<double>(a) * (bar_width + gap);
      if (!bar.present) {
        svg += text_at(x + bar_width / 2, plot_bottom - 4, "×", "middle", 12, " fill=\"#c00\"");
        continue;
      }
      double y = y_of(bar.median);
      svg += strprintf("<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"><title>%s: %s (%s–%s)</title></rect>\n", x, y,
                       bar_width, plot_bottom - y, color_of(allocators[a], a), escape_markup(allocators[a]).c_str(),
                       escape_markup(format_value(bar.median)).c_str(), escape_markup(format_value(bar.min)).c_str(),
                       escape_markup(format_value(bar.max)).c_str());
      double middle = x + bar_width / 2;
      svg += strprintf("<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"black\"/>\n", middle, y_of(bar.min), middle, y_of(bar.max));
    }
    svg += strprintf("<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#444\"/>\n", origin_x + left_margin, plot_bottom,
                     origin_x + panel_width - 10, plot_bottom);
  }
  return svg + "</svg>\n";
}

template <typename Pick>
std::vector<Panel> panels_for(const WorkloadInfo& workload, const Summary& summary, Pick pick) {
  std::vector<Panel> panels;
  for (const auto& row : summary.rows) {
    if (row.workload != workload.name) continue;
    Panel panel{row.case_name.empty() ? row.workload : row.case_name, {}};
    for (const auto& cell : row.cells) {
      const Spread& spread = pick(cell);
      panel.bars.push_back({cell.has_result(), spread.median, spread.min, spread.max});
    }
    panels.push_back(panel);
  }
  return panels;
}

}  // namespace

std::string render_throughput_chart(const WorkloadInfo& workload, const Summary& summary) {
  auto panels = panels_for(workload, summary, [](const CellSummary& cell) -> const Spread& { return cell.ops_per_s; });
  return bar_panels(workload.name + ": throughput (" + workload.ops_unit + "/s, median and min–max; higher is better)", summary.allocators,
                    panels, [](double value) { return format_si(value); });
}

std::string render_peak_rss_chart(const WorkloadInfo& workload, const Summary& summary) {
  auto panels = panels_for(workload, summary, [](const CellSummary& cell) -> const Spread& { return cell.peak_rss; });
  return bar_panels(workload.name + ": peak RSS (median and min–max; lower is better)", summary.allocators, panels,
                    [](double value) { return format_bytes(value); });
}

std::string render_rss_timeline_chart(const WorkloadInfo& workload, const BenchResults& results) {
  const double width = 820, height = 340, left = 70, right = 20, top = 50, bottom = 40;
  std::vector<std::string> names;
  std::vector<const RunRecord*> series;
  for (const auto& allocator : results.allocators) {
    names.push_back(allocator.name);
    const RunRecord* chosen = nullptr;
    for (const auto& run : results.runs) {
      if (run.workload == workload.name && run.allocator == allocator.name && run.ok && !run.rss_series.empty()) {
        chosen = &run;
        break;
      }
    }
    series.push_back(chosen);
  }
  double max_seconds = 0, max_bytes = 0;
  for (const RunRecord* run : series) {
    if (run == nullptr) continue;
    for (const auto& sample : run->rss_series) {
      max_seconds = std::max(max_seconds, sample.seconds);
      max_bytes = std::max(max_bytes, static_cast<double>(sample.bytes));
    }
  }
  double axis_seconds = nice_ceiling(max_seconds), axis_bytes = nice_ceiling(max_bytes / (1024.0 * 1024)) * 1024 * 1024;
  auto x_of = [&](double seconds) { return left + (width - left - right) * seconds / axis_seconds; };
  auto y_of = [&](double bytes) { return height - bottom - (height - top - bottom) * bytes / axis_bytes; };

  std::string svg = strprintf(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" "
      "font-family=\"sans-serif\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
      width, height, width, height);
  svg += text_at(8, 18, workload.name + ": RSS over time (first successful repetition of each allocator)", "start", 14, " font-weight=\"bold\"");
  svg += legend(names, 8, 38);
  for (int tick = 0; tick <= 4; ++tick) {
    double bytes = axis_bytes * tick / 4, seconds = axis_seconds * tick / 4;
    svg += strprintf("<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n", left, y_of(bytes), width - right, y_of(bytes));
    svg += text_at(left - 4, y_of(bytes) + 4, tick == 0 ? std::string("0") : format_bytes(bytes), "end", 10);
    svg += text_at(x_of(seconds), height - bottom + 16, tick == 0 ? std::string("0") : format_seconds(seconds), "middle", 10);
  }
  for (std::size_t a = 0; a < series.size(); ++a) {
    if (series[a] == nullptr) continue;
    std::string points;
    for (const auto& sample : series[a]->rss_series) points += strprintf("%.1f,%.1f ", x_of(sample.seconds), y_of(static_cast<double>(sample.bytes)));
    svg += strprintf("<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" points=\"%s\"/>\n", color_of(names[a], a), points.c_str());
  }
  svg += strprintf("<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#444\"/>\n", left, height - bottom, width - right, height - bottom);
  return svg + "</svg>\n";
}

}  // namespace mallard::tool
