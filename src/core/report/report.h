#pragma once
// Reporters: the same Measurement as a console block or as one JSON object, and back.
#include <nlohmann/json_fwd.hpp>
#include <string>

#include "core/measurement.h"

namespace opcost {

// The result document, written from the record's field table (core/store/measurement_record.h).
nlohmann::json to_json(const Measurement& m);
// A result document (a report's, or a stored row's) read back as a typed record: every field
// the table reads; a field missing from an older document keeps its default. Throws
// std::invalid_argument naming the field when a value has the wrong type.
Measurement from_json(const nlohmann::json& doc);
std::string to_console(const Measurement& m);
// Formats a value with its 95% interval, e.g. "31.84 µs ± 0.21 (±0.7%)".
// "14.6 ms" for 14600 us; units "us" and "mJ" are rescaled, others kept.
std::string human(double value, const char* unit);
std::string with_ci(double value, double low, double high, const char* unit);

}  // namespace opcost
