#pragma once
// The stored measurement, declared once: each field's name, type, unit, SQL column, place in
// the result document (a JSON pointer) and membership of the identity key. The database's
// columns and their migration, the result document (to_json / from_json in core/report), the
// CSV export's columns and the look-up's key are derived from this table, so a field renamed
// or added here changes all of them together, and a document stored by an older opcost still
// reads back by the path it was stored under. Torch-free.
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/measurement.h"

namespace opcost {

enum class FieldType {
  kText,
  kInteger,
  kReal,
  kBool,
  kTextList,      // document: an array; column: the texts joined by commas (the flags)
  kThrottleBits,  // document: the reasons' names (throttle::describe); column: the NVML bits
  kSettings,      // document: an object of name → text; column: that object as JSON text
};
const char* to_string(FieldType t);

// When a field is in the document (and non-NULL in its column).
enum class Presence {
  kAlways,
  kWithEnergy,     // only when energy was measured (energy_mJ.*)
  kWithoutEnergy,  // only when it was not (energy_unavailable)
};

struct RecordField {
  std::string name;  // the column's name where it has one, else the document path's
  FieldType type = FieldType::kText;
  std::string unit;                        // "us", "mJ", "W", "MHz", "C", "s"; "" for none
  std::string sql_column;                  // "" : only in the document
  std::string sql_constraint;              // "NOT NULL", "NOT NULL DEFAULT ''", or ""
  nlohmann::json::json_pointer json_path;  // "" (the root): only a column
  bool identity = false;                   // part of the identity key (Database::Key)
  Presence presence = Presence::kAlways;
  // "" (or no settings) is NULL in the column: a row made without settings, which matches any
  // settings key as a row stored before settings were recorded does.
  bool empty_is_null = false;
  // The value, typed as FieldType says (kThrottleBits: an integer), null for none.
  std::function<nlohmann::json(const Measurement&)> value;
  // Reads the value back; empty for a field derived from others (rel_ci95), never read.
  std::function<void(Measurement&, const nlohmann::json&)> read;

  bool in_document() const { return !json_path.empty(); }
  bool derived() const { return !read; }
  std::string sql_type() const;  // "TEXT", "INTEGER" or "REAL", with the constraint
};

// Every field, columns in their table order first (the CSV export's order).
const std::vector<RecordField>& measurement_fields();
// The measurements table's columns besides id, in order: the fields' columns, then
// result_json (the whole document).
struct RecordColumn {
  std::string name, sql_type;
};
const std::vector<RecordColumn>& measurement_columns();
inline constexpr const char* kDocumentColumn = "result_json";

// The result document of `m` (what to_json returns).
nlohmann::json document_of(const Measurement& m);
// A document read back; throws std::invalid_argument naming the field whose value has the
// wrong type. Fields an older document lacks keep their defaults.
Measurement measurement_of(const nlohmann::json& document);
// The columns' values of `m` (without result_json), by column name.
nlohmann::json column_values(const Measurement& m);

// A document stored before schema 4 has no `waits_for_device`: it is read once from the
// method's note (kWaitsForDeviceNote). Returns whether the document changed.
bool upgrade_document(nlohmann::json& document);

}  // namespace opcost
