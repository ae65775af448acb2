#!/usr/bin/env bash
# Installs the Debian packages mallard's build, tests and benchmarks need,
# when they are missing and we are root. Safe to run again: it only acts on
# what is absent.
set -euo pipefail

packages=(
  cmake g++ make pkg-config
  libgtest-dev libgmock-dev libbenchmark-dev
  libjemalloc-dev libgoogle-perftools-dev libmimalloc-dev libtbb-dev
  valgrind redis-server redis-tools python3 perl git nodejs sqlite3
)
# The Rust program test needs a compiler: Debian's, unless one (rustup's) is
# already on the PATH.
command -v rustc >/dev/null 2>&1 || packages+=(rustc)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
  echo "install-deps: missing packages: ${missing[*]} (run as root, or install them)" >&2
  exit 0
fi
echo "install-deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get install -y -q "${missing[@]}" >/dev/null 2>&1 || {
  apt-get update -q >/dev/null 2>&1
  apt-get install -y -q "${missing[@]}"
}
