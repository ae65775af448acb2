// A streaming JSON writer: enough for results.json without a dependency.
// Commas and nesting are tracked for the caller; numbers that are not finite
// become null, since JSON has no NaN.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace mallard::tool {

class JsonWriter {
 public:
  JsonWriter& begin_object();
  JsonWriter& end_object();
  JsonWriter& begin_array();
  JsonWriter& end_array();
  JsonWriter& key(std::string_view name);
  JsonWriter& value(std::string_view text);
  JsonWriter& value(const char* text) { return value(std::string_view(text)); }
  JsonWriter& value(const std::string& text) { return value(std::string_view(text)); }
  JsonWriter& value(double number);
  JsonWriter& value(std::int64_t number);
  JsonWriter& value(std::uint64_t number);
  JsonWriter& value(int number) { return value(static_cast<std::int64_t>(number)); }
  JsonWriter& value(bool flag);
  const std::string& text() const { return out_; }

  static std::string quote(std::string_view text);

 private:
  void before_value();

  std::string out_;
  std::vector<bool> first_in_scope_;
  bool after_key_ = false;
};

}  // namespace mallard::tool
