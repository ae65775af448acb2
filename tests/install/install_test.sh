#!/usr/bin/env bash
# usage: install_test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1
src=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix

cmake --install "$build" --prefix "$prefix" >/dev/null
test -f "$prefix/include/mallard/mallard.h"
pc=$(find "$prefix" -name mallard.pc)
libdir=$(dirname "$(dirname "$pc")")
test -f "$libdir/libmallard.a"
test -e "$libdir/libmallard.so"
test -f "$libdir/cmake/mallard/mallardConfig.cmake"

# 1. CMake package, shared and static.
mkdir -p "$work/cm"
cp "$src/consumer.c" "$work/cm/"
cp "$src/CMakeLists.consumer.txt" "$work/cm/CMakeLists.txt"
cmake -S "$work/cm" -B "$work/cm/build" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$work/cm/build" >/dev/null
LD_LIBRARY_PATH="$libdir" "$work/cm/build/consumer_shared"
"$work/cm/build/consumer_static"

# 2. pkg-config.
PKG_CONFIG_PATH="$libdir/pkgconfig" pkg-config --exists mallard
cc "$src/consumer.c" -o "$work/pc" $(PKG_CONFIG_PATH="$libdir/pkgconfig" pkg-config --cflags --libs mallard)
LD_LIBRARY_PATH="$libdir" "$work/pc"
echo "install test: ok"
