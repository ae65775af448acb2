#!/usr/bin/env bash
# g++ compiling a template-heavy C++ file: the compiler (driver, cc1plus, as,
# ld) runs on mallard. The assembly it writes and the output of the program
# it builds must be the same as with glibc's malloc.
source "$(dirname "$0")/common.sh"
need g++

cat >"$WORK/program.cpp" <<'CPP'
#include <algorithm>
#include <iostream>
#include <map>
#include <numeric>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

template <int N> struct Fib { static constexpr long value = Fib<N - 1>::value + Fib<N - 2>::value; };
template <> struct Fib<1> { static constexpr long value = 1; };
template <> struct Fib<0> { static constexpr long value = 0; };

template <typename T> T sum_of(const std::vector<T>& v) { return std::accumulate(v.begin(), v.end(), T{}); }

int main() {
  std::map<std::string, std::vector<int>> index;
  for (int i = 0; i < 20000; ++i) index["k" + std::to_string(i % 997)].push_back(i);
  std::ostringstream out;
  for (const auto& [key, values] : index)
    if (key.size() == 3) out << key << '=' << sum_of(values) << ';';
  std::regex digits("[0-9]+");
  std::string text = out.str();
  auto count = std::distance(std::sregex_iterator(text.begin(), text.end(), digits), std::sregex_iterator());
  std::cout << Fib<60>::value << ' ' << index.size() << ' ' << count << ' ' << text.substr(0, 120) << '\n';
}
CPP

build_and_run() {
  g++ -std=c++20 -O2 -S -o program.s "$1/program.cpp"
  g++ -std=c++20 -O2 -o program "$1/program.cpp"
  ./program
  cat program.s
}
export -f build_and_run
compare_runs gxx 1048576 bash -c 'build_and_run "$0"' "$WORK"
