// mixed: the multitest "real world" mix (seed 000), replayed against the
// allocator instead of a disk. 8 jobs each keep 8 I/Os in flight, as fio's
// --numjobs 8 --iodepth 8 did; every I/O allocates a request and a buffer of
// its block size, the job fills it (write) or the mock device does (read)
// page by page, and the oldest I/O completes and is freed when the ring is
// full. The "real" case draws reads (72%) and block sizes from the seed's
// bssplit 4k/85:32k/11:512/3:1m/1 (reads) and 4k/89:32k/10:512k/1 (writes);
// the sweep cases repeat multitest's fixed-size read, write and read/write
// tests for 4k, 16k, 64k, 256k and 1m.
#include <algorithm>
#include <barrier>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <thread>
#include <vector>

#include "util/text.hpp"
#include "workloads/bssplit.hpp"
#include "workloads/common.hpp"
#include "workloads/workload.hpp"

namespace mallard::tool {

namespace {

// What a block layer keeps per I/O besides the data: the request itself.
struct IoUnit {
  std::uint64_t offset;
  std::uint64_t length;
  bool is_read;
  unsigned char* buffer;
  char driver_state[200];
};

struct MixedCase {
  DirectionalSplit split;
  double read_fraction;
};

// "real", or MODE-SIZE with MODE in read, write, rw.
MixedCase case_settings(const Params& params, const std::string& case_name) {
  if (case_name == "real") return {parse_bssplit(params.text("bssplit")), params.number("rwmixread") / 100.0};
  auto dash = case_name.find('-');
  if (dash == std::string::npos) throw std::invalid_argument("mixed: unknown case " + case_name);
  std::string mode = case_name.substr(0, dash);
  auto bytes = parse_size(case_name.substr(dash + 1));
  if (!bytes) throw std::invalid_argument("mixed: bad block size in case " + case_name);
  BlockSizeSplit only{{*bytes, 100.0}};
  double read_fraction = mode == "read" ? 1.0 : mode == "write" ? 0.0 : mode == "rw" ? 0.5 : -1;
  if (read_fraction < 0) throw std::invalid_argument("mixed: unknown mode in case " + case_name);
  return {{only, only}, read_fraction};
}

void complete(IoUnit* unit) {
  // The device writes the data of a read; a write's data was filled at submission.
  if (unit->is_read) touch_pages(unit->buffer, unit->length);
  keep_alive(unit->buffer);
  std::free(unit->buffer);
  std::free(unit);
}

void run_job(const MixedCase& settings, std::uint64_t ios, std::uint32_t depth, unsigned seed, std::uint64_t& bytes_moved) {
  FastRandom random(seed);
  BlockSizePicker read_sizes(settings.split.read), write_sizes(settings.split.write);
  std::vector<IoUnit*> ring(depth, nullptr);
  std::uint64_t moved = 0;
  for (std::uint64_t i = 0; i < ios; ++i) {
    IoUnit*& slot = ring[i % depth];
    if (slot != nullptr) complete(slot);
    bool is_read = random.unit() < settings.read_fraction;
    std::uint64_t length = is_read ? read_sizes.pick(random.unit()) : write_sizes.pick(random.unit());
    auto* unit = static_cast<IoUnit*>(std::malloc(sizeof(IoUnit)));
    unit->offset = random.next() & ~std::uint64_t{4095};
    unit->length = length;
    unit->is_read = is_read;
    unit->buffer = static_cast<unsigned char*>(std::malloc(length));
    if (unit->buffer == nullptr) std::abort();
    if (!is_read) touch_pages(unit->buffer, length);
    moved += length;
    slot = unit;
  }
  for (IoUnit* unit : ring) {
    if (unit != nullptr) complete(unit);
  }
  bytes_moved = moved;
}

void run_mixed(const Params& params, const std::string& case_name, const RunContext&, MetricSink& sink) {
  MixedCase settings = case_settings(params, case_name);
  auto jobs = static_cast<unsigned>(params.count("jobs"));
  auto depth = static_cast<std::uint32_t>(params.count("iodepth"));
  if (jobs == 0 || depth == 0) throw std::invalid_argument("mixed: jobs and iodepth must be positive");
  // Bound the case by I/O count and by bytes, so 1m cases do not run 256x longer than 4k ones.
  double mean_bytes = settings.read_fraction * mean_block_size(settings.split.read) +
                      (1 - settings.read_fraction) * mean_block_size(settings.split.write);
  std::uint64_t ios = case_name == "real" ? params.count("real_ios")
                                          : std::min<std::uint64_t>(params.count("ios"), static_cast<std::uint64_t>(static_cast<double>(params.size("bytes")) / mean_bytes));
  std::uint64_t per_job = std::max<std::uint64_t>(ios / jobs, depth);

  std::vector<std::uint64_t> bytes_moved(jobs, 0);
  std::barrier start_line(jobs + 1);
  std::vector<std::jthread> threads;
  for (unsigned j = 0; j < jobs; ++j) {
    threads.emplace_back([&, j] {
      start_line.arrive_and_wait();
      run_job(settings, per_job, depth, j + 1, bytes_moved[j]);
    });
  }
  // Clock first, then release the workers (see sizes.cpp).
  auto start = SteadyClock::now();
  start_line.arrive_and_wait();
  for (auto& thread : threads) thread.join();
  double seconds = seconds_between(start, SteadyClock::now());
  std::uint64_t total_bytes = 0;
  for (auto bytes : bytes_moved) total_bytes += bytes;
  sink.throughput(static_cast<double>(per_job * jobs), seconds);
  sink.metric("bytes_per_s", static_cast<double>(total_bytes) / seconds);
}

}  // namespace

Workload make_mixed_workload() {
  Workload workload;
  workload.name = "mixed";
  workload.description =
      "multitest real-world mix: 8 jobs x iodepth 8 allocating request + buffer per I/O, 72% reads, bssplit "
      "4k/85:32k/11:512/3:1m/1,4k/89:32k/10:512k/1; plus read/write/rw sweeps over 4k..1m";
  workload.ops_unit = "I/Os";
  workload.params = {
      {"jobs", "8", "8", "concurrent jobs (threads)"},
      {"iodepth", "8", "8", "I/Os in flight per job"},
      {"rwmixread", "72", "72", "percent reads in the real case"},
      {"bssplit", "4k/85:32k/11:512/3:1m/1,4k/89:32k/10:512k/1", "4k/85:32k/11:512/3:1m/1,4k/89:32k/10:512k/1",
       "fio bssplit for the real case (READ,WRITE)"},
      {"sweep_sizes", "4k,16k,64k,256k,1m", "4k,64k,1m", "block sizes of the sweep cases"},
      {"sweep_modes", "read,write,rw", "rw", "modes of the sweep cases"},
      {"real_ios", "10M", "5M", "I/Os in the real case"},
      {"ios", "8M", "1M", "I/Os per sweep case at most"},
      {"bytes", "128G", "8G", "bytes per sweep case at most (bounds the large-block cases)"},
  };
  workload.cases = [](const Params& params) {
    std::vector<std::string> cases{"real"};
    for (const auto& size : split(params.text("sweep_sizes"), ',')) {
      for (const auto& mode : split(params.text("sweep_modes"), ',')) cases.push_back(mode + "-" + size);
    }
    return cases;
  };
  workload.run = run_mixed;
  return workload;
}

}  // namespace mallard::tool
