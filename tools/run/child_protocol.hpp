// The lines a benchmark child writes to the runner on descriptor 3, one fact
// per line, and how the runner folds them into a RunRecord:
//   provider PATH            the object the child proved malloc comes from
//   throughput OPS SECONDS   the headline result
//   metric NAME VALUE        any other number
//   override NAME VALUE      peak_rss_bytes/final_rss_bytes/user_s/sys_s measured on another process
//   final_rss BYTES          the child's RSS at the end
//   error MESSAGE            the run is not a result
//   done                     the child finished normally
#pragma once

#include <string>
#include <string_view>

#include "report/results.hpp"

namespace mallard::tool {

inline constexpr int kResultDescriptor = 3;

// Applies one line; returns false for a line it does not understand.
bool apply_child_line(std::string_view line, RunRecord& record, bool& saw_done);

}  // namespace mallard::tool
