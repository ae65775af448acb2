// mallard STL: containers that keep their first N elements inside the object,
// and chained arenas. Header-only C++20; works over any global allocator.
//
//   mallard::inline_vector<T, N>                      std::vector<T> with N inline elements
//   mallard::inline_map<K, V, N, Compare>             std::map with N inline nodes
//   mallard::inline_set<K, N, Compare>                std::set with N inline nodes
//   mallard::inline_unordered_map<K, V, N, Hash, Eq>  std::unordered_map with N inline nodes and buckets
//   mallard::inline_list<T, N>                        std::list with N inline nodes
//   mallard::arena, mallard::arena_resource           chained arenas, and a std::pmr::memory_resource
//
// docs/STL.md explains the design, the guarantees and the allocator traits.
#pragma once

#include "stl/arena.hpp"
#include "stl/inline_list.hpp"
#include "stl/inline_map.hpp"
#include "stl/inline_unordered_map.hpp"
#include "stl/inline_vector.hpp"
