// `mallard which` on live processes started under known allocators, and
// `mallard run` starting one.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <thread>

#include "alloc/allocator_catalog.hpp"
#include "alloc/allocator_identity.hpp"
#include "util/proc.hpp"
#include "util/spawn.hpp"

namespace mallard::tool {
namespace {

// A `sleep` started under a preload, killed and reaped when the test ends.
class SleepingChild {
 public:
  explicit SleepingChild(const std::vector<std::string>& argv, const std::string& preload)
      : pid_(spawn_process(argv, environment_with_preload(current_environment(), preload), {})) {}
  ~SleepingChild() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  pid_t pid() const { return pid_; }
  // Waits until the process runs `program` (exec done, libraries mapped).
  bool wait_for_exec(const std::string& program) const {
    for (int i = 0; i < 500; ++i) {
      auto executable = executable_of(pid_);
      if (executable && executable->ends_with("/" + program) && mapped_files(pid_).size() > 3) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }

 private:
  pid_t pid_;
};

const AllocatorSpec* available(const std::vector<AllocatorSpec>& catalog, const char* name) {
  const AllocatorSpec* spec = find_allocator(catalog, name);
  return spec != nullptr && spec->available ? spec : nullptr;
}

TEST(Which, ProcessUnderPreloadedJemalloc) {
  auto catalog = known_allocators();
  const AllocatorSpec* jemalloc = available(catalog, "jemalloc");
  if (jemalloc == nullptr) GTEST_SKIP() << "jemalloc not installed";
  SleepingChild child({"sleep", "30"}, jemalloc->path);
  ASSERT_GT(child.pid(), 0);
  ASSERT_TRUE(child.wait_for_exec("sleep"));
  std::string error;
  auto identity = identify_process_allocator(child.pid(), &error);
  ASSERT_TRUE(identity) << error;
  EXPECT_EQ(identity->name, "jemalloc");
  EXPECT_EQ(identity->provider_path, canonical_path(jemalloc->path));
  EXPECT_EQ(identity->how, "LD_PRELOAD");
}

TEST(Which, ProcessWithoutPreloadIsGlibc) {
  SleepingChild child({"sleep", "30"}, "");
  ASSERT_TRUE(child.wait_for_exec("sleep"));
  std::string error;
  auto identity = identify_process_allocator(child.pid(), &error);
  ASSERT_TRUE(identity) << error;
  EXPECT_EQ(identity->name, "glibc");
  EXPECT_EQ(identity->how, "glibc default");
}

TEST(Which, ProcessUnderMallardWhenBuilt) {
  auto catalog = known_allocators();
  const AllocatorSpec* mallard = available(catalog, "mallard");
  if (mallard == nullptr) GTEST_SKIP() << "libmallard.so not built";
  SleepingChild child({"sleep", "30"}, mallard->path);
  ASSERT_TRUE(child.wait_for_exec("sleep"));
  std::string error;
  auto identity = identify_process_allocator(child.pid(), &error);
  ASSERT_TRUE(identity) << error;
  EXPECT_EQ(identity->name, "mallard");
}

TEST(Which, MissingProcessIsAnError) {
  std::string error;
  EXPECT_FALSE(identify_process_allocator(0x7ffffff0, &error));
  EXPECT_FALSE(error.empty());
}

TEST(Which, CommandLineOnAProcessStartedByMallardRun) {
  auto catalog = known_allocators();
  const AllocatorSpec* tcmalloc = available(catalog, "tcmalloc");
  if (tcmalloc == nullptr) GTEST_SKIP() << "tcmalloc not installed";
  SleepingChild child({MALLARD_TOOL_PATH, "run", "--alloc", "tcmalloc", "--", "sleep", "30"}, "");
  ASSERT_TRUE(child.wait_for_exec("sleep"));
  std::string command = std::string(MALLARD_TOOL_PATH) + " which " + std::to_string(child.pid());
  FILE* pipe = popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  char line[1024] = {};
  ASSERT_NE(std::fgets(line, sizeof line, pipe), nullptr);
  EXPECT_EQ(pclose(pipe), 0);
  std::string output = line;
  EXPECT_NE(output.find(": tcmalloc (" + canonical_path(tcmalloc->path) + "), LD_PRELOAD"), std::string::npos) << output;
}

TEST(Which, OwnProcessIsGlibc) {
  AllocatorIdentity identity = identify_own_allocator();
  EXPECT_EQ(identity.name, "glibc");
  std::string explanation;
  EXPECT_TRUE(own_allocator_matches("", &explanation)) << explanation;
  EXPECT_FALSE(own_allocator_matches("/usr/lib/x86_64-linux-gnu/libjemalloc.so.2", &explanation));
}

}  // namespace
}  // namespace mallard::tool
