// The progress bar and ETA on stderr while a bench runs. It draws only when
// stderr is a terminal; the ETA sums, over the jobs still to run, the mean
// time that job's benchmark took so far (or the mean of all jobs before any
// repetition of it finished).
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

namespace mallard::tool {

class ProgressDisplay {
 public:
  // One entry per job in run order: the benchmark (row) it belongs to.
  ProgressDisplay(std::vector<std::string> job_rows, bool enabled);
  void start_job(std::size_t index, const std::string& label);
  void finish_job(std::size_t index, double seconds);
  // Clears the bar.
  void close();
  double estimated_seconds_left() const;

 private:
  void draw(const std::string& label) const;

  std::vector<std::string> job_rows_;
  bool enabled_;
  std::size_t finished_ = 0;
  std::size_t next_ = 0;
  std::map<std::string, std::pair<double, int>> row_time_;  // total seconds, jobs
  double total_time_ = 0;
};

}  // namespace mallard::tool
