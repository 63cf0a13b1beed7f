#pragma once
// A sweep's rows (the array `opcost db export --json` writes) summarised for the HTML report:
// per value of each axis, the count, mean, min and max of the time, energy and power per call,
// and per pair of axes the means (a heatmap's cells). A report of a 10,000-row sweep embeds
// these instead of the rows, so that it stays small and opens fast. Torch-free.
#include <cstddef>
#include <nlohmann/json.hpp>

namespace opcost {

// Up to this many rows, the report embeds the rows themselves (slim_sweep_row) beside the summary.
inline constexpr std::size_t kSweepRowsInlined = 2000;
// Bounds that keep the summary small whatever the export holds: axes summarised (in the order
// the rows name them), values per axis, axes paired for heatmaps, and cells per heatmap.
inline constexpr std::size_t kSweepSummaryMaxAxes = 16;
inline constexpr std::size_t kSweepSummaryMaxValues = 1000;
inline constexpr std::size_t kSweepHeatmapMaxAxes = 6;  // 15 pairs
inline constexpr std::size_t kSweepHeatmapMaxCells = 10000;
// Roofline points a summary carries (distinct calls whose FLOPs and bytes core/estimate/call_work
// counts, with them), so that a sweep too large to embed still gets its roofline.
inline constexpr std::size_t kSweepRooflineMaxPoints = 5000;

// The summary (its layout: docs/report.md). `rows` is an array of result documents, each with
// "axes" (an object, or null for a row no sweep made); rows and fields that are not what an
// export writes count as rows without that figure, never as an error.
nlohmann::json summarize_sweep(const nlohmann::json& rows);

// One exported row with only what the report draws (op, args, dtype, device, sweep, axes, flags,
// db_id and the time, energy and power figures with their intervals), at the paths the export
// has them, and its "work" (family, flops, bytes) where call_work counts it: the energy windows and settings of each
// row would make a 2,000-row report tens of MB.
nlohmann::json slim_sweep_row(const nlohmann::json& row);

}  // namespace opcost
