#pragma once
// `opcost trace MODEL`: a model's steps traced (workflow/trace.h), written as a Chrome trace
// and shown as tables per operator or per layer.
#include <string>

#include "core/trace/table.h"
#include "workflow/trace.h"

namespace opcost {

struct TraceCliOptions {
  ModelOptions model;
  bool energy = false;  // energy per call and per layer (workflow/trace.h)
  // How --energy validates the model first: validate's loops, and the database (set by main).
  PredictOptions energy_options = PredictOptions::validate();
  std::string import_path;  // a torch.profiler Chrome trace to read instead of running a model
  TraceRecordOptions record;
  std::string output;                   // the Chrome trace (.json, or .json.gz compressed); "" for none
  bool table = false;                   // print the table (the default when no output is named)
  std::string group_by = "op";          // op, shape (operator and input shapes) or layer
  std::string sort_by = "gpu";          // a column of the table
  std::size_t limit = kTraceTableRows;  // table rows (0: all)
  bool json = false;                    // the table as JSON
  std::string html;                     // the table as an HTML page (workflow/report_html.h)
  double min_duration_us = 0;           // leave shorter calls and kernels out of the trace file
  std::string layers;                   // only these layers (a regular expression) in the trace file
  std::string only_steps;               // "A" or "A-B": only these steps in the trace file and the tables
};

int run_trace_command(TraceCliOptions o);

}  // namespace opcost
