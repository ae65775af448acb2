// Describes the machine a benchmark ran on, for results.json and the reports.
#pragma once

#include "report/results.hpp"

namespace mallard::tool {

MachineInfo describe_machine();
// Local time as "2024-05-01T12:34:56+0200" and as a directory-friendly "20240501-123456".
std::string iso_timestamp_now();
std::string compact_timestamp_now();

}  // namespace mallard::tool
