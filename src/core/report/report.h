#pragma once
// Reporters: the same Measurement as a console block or as one JSON object.
#include <nlohmann/json_fwd.hpp>
#include <string>

#include "core/measurement.h"

namespace opcost {

nlohmann::json to_json(const Measurement& m);
std::string to_console(const Measurement& m);
// Formats a value with its 95% interval, e.g. "31.84 µs ± 0.21 (±0.7%)".
// "14.6 ms" for 14600 us; units "us" and "mJ" are rescaled, others kept.
std::string human(double value, const char* unit);
std::string with_ci(double value, double low, double high, const char* unit);

}  // namespace opcost
