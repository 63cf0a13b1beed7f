#include "workflow/predict_stages_database.h"

#include <fmt/format.h>

#include <set>

#include "core/predict/extent_match.h"
#include "core/predict/float_scalar_match.h"
#include "core/spec/spec_file.h"

namespace opcost {

namespace {

// Rows of one operator compared by meaning when none matches a call's text (at most this many,
// newest first): a database of a large sweep must not make a prediction parse all of it.
constexpr std::size_t kMaxRowsComparedPerOp = 2000;

}  // namespace

std::optional<Measurement> DatabaseCosts::newest(const StoredCallKey& k) {
  if (!db_) return std::nullopt;
  return db_->lookup(Database::Key::of(k.op, k.overload, k.args, device_name_, k.cache_mode, k.autocast), true);
}

// A call no row matches exactly: the newest row of the same operator and overload whose
// arguments differ only in floating-point scalar values (AdamW's step size changes every step;
// core/predict/float_scalar_match.h says why the kernel's work stays the same, and for which
// operators it does not).
std::optional<StoredCosts::NearRow> DatabaseCosts::ignoring_float_scalars(const InventoryEntry& e,
                                                                          const StoredCallKey& k) {
  if (!db_ || float_scalars_may_change_work(e.op)) return std::nullopt;
  std::optional<OpCall> call;
  try {
    call = parse_call_line(e.signature(), "inventory");
  } catch (const std::exception&) {
    return std::nullopt;  // measuring it says why, with its layer
  }
  if (!has_float_scalars(call->args)) return std::nullopt;
  auto rows = rows_where(e, k, 1, [&](const StoredRow& r) { return same_but_float_scalars(call->args, *r.args); });
  if (rows.empty()) return std::nullopt;
  return std::move(rows.front());
}

// A call no row matches: the rows of its operator measured at another size, flagged ones too
// (a row measured at the power cap is still that kernel's time there; the estimate prefers an
// unflagged one as near), for an estimate to scale from (workflow/predict_estimates.h).
std::vector<StoredCosts::NearRow> DatabaseCosts::at_other_sizes(const InventoryEntry& e, const StoredCallKey& k) {
  if (!db_) return {};
  std::optional<OpCall> call;
  try {
    call = parse_call_line(e.signature(), "inventory");
  } catch (const std::exception&) {
    return {};
  }
  std::set<std::string> seen;  // repeats of one size count once (the first: unflagged, newest)
  return rows_where(e, k, kMaxSizeAnchors, [&](const StoredRow& r) {
    return extent_pair(call->args, *r.args).has_value() && seen.insert(r.row.args).second;
  });
}

std::vector<StoredCosts::NearRow> DatabaseCosts::rows_where(const InventoryEntry& e, const StoredCallKey& k,
                                                            std::size_t limit,
                                                            const std::function<bool(const StoredRow&)>& matches) {
  auto [at, fresh] = rows_by_op_.try_emplace(fmt::format("{}\n{}\n{}", e.op, e.overload, k.cache_mode));
  std::vector<StoredRow>& rows = at->second;
  if (fresh)
    for (auto& row : db_->calls_of(Database::Key::of(e.op, e.overload, "", device_name_, k.cache_mode, k.autocast),
                                   kMaxRowsComparedPerOp))
      rows.push_back(StoredRow{std::move(row), false, std::nullopt});
  std::vector<NearRow> found;
  for (StoredRow& r : rows) {
    if (found.size() >= limit) break;
    if (!r.read) {
      r.read = true;
      try {
        r.args = parse_call_line(fmt::format("{} {}", e.display_name(), r.row.args), "database").args;
      } catch (const std::exception&) {}
    }
    if (!r.args || !matches(r)) continue;
    if (auto m = db_->get(r.row.id)) found.push_back(NearRow{std::move(*m), r.row.args});
  }
  return found;
}

}  // namespace opcost
