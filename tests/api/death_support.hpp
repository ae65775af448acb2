// Death tests that check the exact address in mallard's error message.
//
// Death tests run in the "threadsafe" style: the child re-executes the test
// binary, so with ASLR its addresses differ from the parent's and a regex
// built in the parent cannot name them. Instead the dying statement first
// announces its own addresses on stderr (announce_addresses), and the
// ReportsAddresses matcher substitutes them into the expected message.
#pragma once

#include <gtest/gtest.h>
#include <sys/resource.h>

#include <csignal>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

namespace mallard_test {

inline constexpr const char* kAnnounceTag = "mallard-test: addresses:";

// Prints "mallard-test: addresses: 0x... 0x..." on stderr. Called first in
// every dying statement; it also turns core dumps off, since each death test
// ends in abort().
inline void announce_addresses(std::initializer_list<const void*> addresses) {
  rlimit no_core{0, 0};
  setrlimit(RLIMIT_CORE, &no_core);
  std::string line = kAnnounceTag;
  char buf[32];
  for (const void* a : addresses) {
    std::snprintf(buf, sizeof buf, " %p", a);
    line += buf;
  }
  line += '\n';
  std::fputs(line.c_str(), stderr);
  std::fflush(stderr);
}

// Matches the stderr of a dead child when it contains `pattern` with {0},
// {1}, ... replaced by the addresses the child announced.
class ReportsAddressesMatcher : public testing::MatcherInterface<const std::string&> {
 public:
  explicit ReportsAddressesMatcher(std::string pattern) : pattern_(std::move(pattern)) {}

  bool MatchAndExplain(const std::string& err, testing::MatchResultListener* listener) const override {
    size_t at = err.find(kAnnounceTag);
    if (at == std::string::npos) {
      *listener << "the child never announced its addresses";
      return false;
    }
    std::istringstream in(err.substr(at + std::strlen(kAnnounceTag), err.find('\n', at) - at));
    std::vector<std::string> addresses;
    for (std::string a; in >> a;) addresses.push_back(a);
    std::string expected = pattern_;
    for (size_t i = 0; i < addresses.size(); ++i) {
      std::string key(1, '{');  // (not "{" + ...: GCC 12 warns -Wrestrict on that)
      key += std::to_string(i);
      key += '}';
      for (size_t pos; (pos = expected.find(key)) != std::string::npos;) expected.replace(pos, key.size(), addresses[i]);
    }
    if (err.find(expected) == std::string::npos) {
      *listener << "stderr lacks \"" << expected << "\"";
      return false;
    }
    return true;
  }
  void DescribeTo(std::ostream* os) const override { *os << "reports \"" << pattern_ << "\" with the announced addresses"; }

 private:
  std::string pattern_;
};

inline testing::Matcher<const std::string&> ReportsAddresses(std::string pattern) {
  return testing::MakeMatcher(new ReportsAddressesMatcher(std::move(pattern)));
}

}  // namespace mallard_test
