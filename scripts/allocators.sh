# Sourced by the benchmark scripts: the allocators compared and the library
# each is preloaded from (Debian's packages; glibc needs no preload).
# allocator_library NAME MALLARD_LIBRARY prints the path, empty for glibc.
allocator_names=(glibc jemalloc tcmalloc mimalloc tbbmalloc mallard)

allocator_library() {
  local libdir=/usr/lib/x86_64-linux-gnu
  case $1 in
    glibc) echo "" ;;
    jemalloc) echo "$libdir/libjemalloc.so.2" ;;
    tcmalloc) echo "$libdir/libtcmalloc_minimal.so.4" ;;
    mimalloc) echo "$libdir/libmimalloc.so.2" ;;
    tbbmalloc) echo "$libdir/libtbbmalloc_proxy.so.2" ;;
    mallard) echo "$2" ;;
    *) echo "allocators.sh: unknown allocator $1" >&2; return 1 ;;
  esac
}
