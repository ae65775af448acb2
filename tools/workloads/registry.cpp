// The list of workloads `mallard bench` knows, in the order they run and print.
#include <stdexcept>

#include "util/text.hpp"
#include "workloads/workload.hpp"

namespace mallard::tool {

Workload make_sizes_workload();
Workload make_iopath_workload();
Workload make_mixed_workload();
Workload make_kv_workload();
Workload make_redis_workload();
Workload make_larson_workload();
Workload make_xmalloc_workload();
Workload make_churn_workload();
Workload make_cache_scratch_workload();
Workload make_cache_thrash_workload();
Workload make_threadchurn_workload();
Workload make_regrow_workload();
Workload make_rss_return_workload();

const std::vector<Workload>& all_workloads() {
  static const std::vector<Workload> workloads = [] {
    std::vector<Workload> list;
    list.push_back(make_sizes_workload());
    list.push_back(make_iopath_workload());
    list.push_back(make_mixed_workload());
    list.push_back(make_kv_workload());
    list.push_back(make_redis_workload());
    list.push_back(make_larson_workload());
    list.push_back(make_xmalloc_workload());
    list.push_back(make_churn_workload());
    list.push_back(make_cache_scratch_workload());
    list.push_back(make_cache_thrash_workload());
    list.push_back(make_threadchurn_workload());
    list.push_back(make_regrow_workload());
    list.push_back(make_rss_return_workload());
    return list;
  }();
  return workloads;
}

const Workload* find_workload(std::string_view name) {
  for (const auto& workload : all_workloads()) {
    if (workload.name == name) return &workload;
  }
  return nullptr;
}

ParamValues resolve_params(const Workload& workload, bool quick, const ParamValues& overrides) {
  ParamValues values;
  for (const auto& spec : workload.params) values[spec.name] = quick ? spec.quick_value : spec.default_value;
  for (const auto& [name, value] : overrides) {
    if (!values.contains(name)) {
      throw std::invalid_argument("workload '" + workload.name + "' has no parameter '" + name + "'");
    }
    values[name] = value;
  }
  return values;
}

std::vector<std::string> cases_of(const Workload& workload, const ParamValues& values) {
  if (!workload.cases) return {""};
  return workload.cases(Params(values));
}

const std::string& Params::text(const std::string& name) const {
  auto found = values_.find(name);
  if (found == values_.end()) throw std::invalid_argument("missing parameter '" + name + "'");
  return found->second;
}

std::uint64_t Params::size(const std::string& name) const {
  auto value = parse_size(text(name));
  if (!value) throw std::invalid_argument("parameter '" + name + "' is not a size: " + text(name));
  return *value;
}

std::uint64_t Params::count(const std::string& name) const {
  auto value = parse_count(text(name));
  if (!value) throw std::invalid_argument("parameter '" + name + "' is not a count: " + text(name));
  return *value;
}

double Params::number(const std::string& name) const {
  auto value = parse_number(text(name));
  if (!value) throw std::invalid_argument("parameter '" + name + "' is not a number: " + text(name));
  return *value;
}

}  // namespace mallard::tool
