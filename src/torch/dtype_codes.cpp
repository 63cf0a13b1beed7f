#include "torch/dtype_codes.h"

#include <map>

#include "core/spec/arg_value.h"

namespace opcost {

at::ScalarType scalar_type_of(const std::string& code) {
  static const std::map<std::string, at::ScalarType> m = {{"f64", at::kDouble},
                                                          {"f32", at::kFloat},
                                                          {"f16", at::kHalf},
                                                          {"bf16", at::kBFloat16},
                                                          {"i64", at::kLong},
                                                          {"i32", at::kInt},
                                                          {"i16", at::kShort},
                                                          {"i8", at::kChar},
                                                          {"u8", at::kByte},
                                                          {"bool", at::kBool},
                                                          {"c64", at::kComplexFloat},
                                                          {"c128", at::kComplexDouble},
                                                          {"f8e4m3", at::ScalarType::Float8_e4m3fn},
                                                          {"f8e5m2", at::ScalarType::Float8_e5m2}};
  return m.at(code);
}

std::string code_of(at::ScalarType t) {
  // Called for every tensor an inventory records: a table, built once.
  static const std::map<at::ScalarType, std::string> codes = [] {
    std::map<at::ScalarType, std::string> m;
    for (const auto& d : dtype_names()) m.emplace(scalar_type_of(d.canonical), d.canonical);
    return m;
  }();
  auto it = codes.find(t);
  return it != codes.end() ? it->second : c10::toString(t);
}

}  // namespace opcost
