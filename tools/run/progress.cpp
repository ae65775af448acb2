#include "run/progress.hpp"

#include <cstdio>

#include "util/text.hpp"

namespace mallard::tool {

ProgressDisplay::ProgressDisplay(std::vector<std::string> job_rows, bool enabled) : job_rows_(std::move(job_rows)), enabled_(enabled) {}

double ProgressDisplay::estimated_seconds_left() const {
  if (finished_ == 0) return -1;
  double overall_mean = total_time_ / static_cast<double>(finished_);
  double left = 0;
  for (std::size_t i = next_; i < job_rows_.size(); ++i) {
    auto known = row_time_.find(job_rows_[i]);
    left += known == row_time_.end() ? overall_mean : known->second.first / known->second.second;
  }
  return left;
}

void ProgressDisplay::start_job(std::size_t index, const std::string& label) {
  next_ = index;
  draw(label);
}

void ProgressDisplay::finish_job(std::size_t index, double seconds) {
  auto& [total, jobs] = row_time_[job_rows_[index]];
  total += seconds;
  ++jobs;
  total_time_ += seconds;
  ++finished_;
  next_ = index + 1;
}

void ProgressDisplay::draw(const std::string& label) const {
  if (!enabled_) return;
  constexpr int kWidth = 28;
  double fraction = job_rows_.empty() ? 1 : static_cast<double>(finished_) / static_cast<double>(job_rows_.size());
  int filled = static_cast<int>(fraction * kWidth);
  std::string bar(static_cast<std::size_t>(filled), '#');
  bar.append(static_cast<std::size_t>(kWidth - filled), '.');
  std::fprintf(stderr, "\r\x1b[K[%s] %zu/%zu %3.0f%%  ETA %s  %s", bar.c_str(), finished_, job_rows_.size(), fraction * 100,
               format_clock(estimated_seconds_left()).c_str(), label.c_str());
  std::fflush(stderr);
}

void ProgressDisplay::close() {
  if (!enabled_) return;
  std::fprintf(stderr, "\r\x1b[K");
  std::fflush(stderr);
}

}  // namespace mallard::tool
