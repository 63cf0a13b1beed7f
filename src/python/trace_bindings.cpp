#include "python/trace_bindings.h"

#include <pybind11/stl.h>

#include <nlohmann/json.hpp>

#include "core/trace/step_selection.h"
#include "core/trace/table.h"
#include "core/trace/trace_file.h"
#include "torch/trace_recorder.h"
#include "workflow/reporters/reporter.h"

namespace py = pybind11;

namespace opcost {

void bind_trace(py::module_& m) {
  py::class_<TraceRun>(m, "TraceRun")
      .def_readonly("device", &TraceRun::device)
      .def_property_readonly("steps", [](const TraceRun& r) { return r.steps.size(); })
      .def_property_readonly("layers", [](const TraceRun& r) { return r.layers.size(); })
      .def_property_readonly("calls", [](const TraceRun& r) { return r.ops.size(); })
      .def_property_readonly("device_activities", [](const TraceRun& r) { return r.device_activities.size(); })
      .def_readonly("untied", &TraceRun::untied)
      .def_readonly("counters_unavailable", &TraceRun::counters_unavailable)
      .def_readonly("energy_why", &TraceRun::energy_why)
      .def(
          "table",
          [](const TraceRun& r, const std::string& group_by, const std::string& sort_by, std::size_t limit) {
            return make_reporter(ReportFormat::kText)->trace_table(trace_table(r, group_by, false), sort_by, limit);
          },
          py::arg("group_by"), py::arg("sort_by"), py::arg("limit"))
      .def(
          "table_json",
          [](const TraceRun& r, const std::string& group_by) { return to_json(trace_table(r, group_by, true)).dump(); },
          py::arg("group_by"))
      .def(
          "only_steps",
          [](const TraceRun& r, const std::string& steps) { return only_steps(r, parse_step_range(steps)); },
          py::arg("steps"))
      .def(
          "export",
          [](const TraceRun& r, const std::string& path, double min_duration_us, const std::string& layers) {
            py::gil_scoped_release release;
            save_trace(r, path, TraceFileOptions{min_duration_us, layers});
          },
          py::arg("path"), py::arg("min_duration_us") = 0.0, py::arg("layers") = "");
  py::class_<TraceRecorder>(m, "TraceRecorder")
      .def(py::init([](const std::string& kind, int index, int wait, int warmup, int active, int repeat, bool shapes,
                       bool flops, bool nvtx) {
             TraceRecordOptions o;
             o.schedule = TraceSchedule{wait, warmup, active, repeat};
             o.shapes = shapes;
             o.flops = flops;
             o.nvtx = nvtx;
             return std::make_unique<TraceRecorder>(kind, index, o);
           }),
           py::arg("device_kind"), py::arg("device_index"), py::arg("wait"), py::arg("warmup"), py::arg("active"),
           py::arg("repeat"), py::arg("shapes"), py::arg("flops"), py::arg("nvtx") = false)
      .def("next_step", &TraceRecorder::next_step)
      .def("finish", &TraceRecorder::finish);
}

}  // namespace opcost
