#pragma once
// The stored costs a prediction reads, from an opcost database (predict_stages.h's
// StoredCosts). Torch-free.
#include <cstddef>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/spec/op_call.h"
#include "core/store/database.h"
#include "workflow/predict_stages.h"

namespace opcost {

class DatabaseCosts final : public StoredCosts {
 public:
  // `db` may be null (predict with no database yet: an empty one); it must outlive this.
  DatabaseCosts(const Database* db, std::string device_name) : db_(db), device_name_(std::move(device_name)) {}
  // Any settings (Key::settings_key unset): a budget or a target changes an interval, not the quantity.
  std::optional<Measurement> newest(const StoredCallKey& key) override;
  std::optional<NearRow> ignoring_float_scalars(const InventoryEntry& entry, const StoredCallKey& key) override;
  std::vector<NearRow> at_other_sizes(const InventoryEntry& entry, const StoredCallKey& key) override;

 private:
  struct StoredRow {
    Database::StoredCall row;
    bool read = false;                          // its arguments parsed (on first use)
    std::optional<std::vector<NamedArg>> args;  // none: they do not read back (an older opcost's)
  };
  // The rows of the entry's operator, overload and cache mode (read once, newest first), each
  // with its arguments parsed on first use; the rows `matches` accepts, `limit` at most.
  std::vector<NearRow> rows_where(const InventoryEntry& e, const StoredCallKey& k, std::size_t limit,
                                  const std::function<bool(const StoredRow&)>& matches);
  const Database* db_;
  std::string device_name_;
  std::map<std::string, std::vector<StoredRow>> rows_by_op_;  // by operator, overload and cache mode
};

}  // namespace opcost
