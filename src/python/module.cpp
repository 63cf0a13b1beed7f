// opcost._core: the Python package's face over the workflow library. Python runs the user's
// model; this module observes it, measures operators and steps, and predicts, through the
// same workflows as the command line. Results cross as JSON documents (the CLI's own), which
// the Python side wraps in objects. No LibTorch header is needed here: the workflows' headers
// are torch-free, and the library links the torch that Python has loaded.
#include <fmt/format.h>
#include <pybind11/functional.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <optional>

#include "core/report/progress.h"
#include "core/report/report.h"
#include "core/spec/arg_value.h"
#include "core/spec/op_call.h"
#include "core/store/database.h"
#include "core/sys/interrupt.h"
#include "core/text/text.h"
#include "core/version.h"
#include "python/trace_bindings.h"
#include "torch/observer.h"
#include "torch/replay.h"
#include "torch/runner.h"
#include "workflow/measure.h"
#include "workflow/model_inventory.h"
#include "workflow/predict.h"
#include "workflow/sweep.h"
#include "workflow/trace.h"

namespace py = pybind11;
using namespace opcost;

namespace {

// Ctrl-C from Python. Python's own SIGINT handler only sets a flag, which the interpreter reads
// when it runs Python code: a long C++ loop would never see it, and a KeyboardInterrupt raised
// in a callback (a progress note) would reach the workflow as a std::exception, be noted as the
// operator's failure ("KeyboardInterrupt: <EMPTY MESSAGE>") and the run would go on. Instead the
// Python error that stops the run is held here and the run unwinds with Interrupted (which no
// workflow catches); when that reaches Python, the held error is raised again, traceback and all.
std::optional<py::error_already_set>& held_interrupt() {
  // Never destroyed: at exit there may be no interpreter to release a Python object to.
  static auto* held = new std::optional<py::error_already_set>;
  return *held;
}

// The check the watchdog calls between measured calls (core/sys/interrupt.h). Signals are only
// read, and their Python handlers only run, in the main thread with the GIL: elsewhere (a sweep
// worker that released it) the answer is no.
bool python_signal_raised() {
  if (!PyGILState_Check() || PyErr_CheckSignals() == 0) return false;
  held_interrupt().emplace();  // takes the error the handler raised (KeyboardInterrupt by default)
  return true;
}

// Calls Python from a workflow. An error that is not an Exception (KeyboardInterrupt, SystemExit:
// BaseException's own, made so that generic handlers do not catch them) ends the run; the rest
// (the model's own errors) keep their type and message.
template <typename... Args>
py::object call_python(const py::handle& fn, Args&&... args) {
  try {
    return fn(std::forward<Args>(args)...);
  } catch (py::error_already_set& e) {
    if (e.matches(PyExc_Exception)) throw;
    held_interrupt().emplace(std::move(e));
    throw Interrupted{};
  }
}

// Interrupted reaching Python: the held error again, or a plain KeyboardInterrupt.
void translate_interrupted(std::exception_ptr p) {
  try {
    if (p) std::rethrow_exception(p);
  } catch (const Interrupted&) {
    auto& held = held_interrupt();
    if (held) {
      held->restore();
      held.reset();
    } else {
      PyErr_SetNone(PyExc_KeyboardInterrupt);
    }
  }
}

// A budget or interval from the Python side, checked again here (the package checks first):
// NaN, an infinity or a negative number must never reach a measurement loop.
double positive_number(const py::dict& o, const char* key, double at_most) {
  const double v = o[key].cast<double>();
  if (!std::isfinite(v) || v <= 0 || v > at_most)
    throw std::invalid_argument(fmt::format("{}={}: use a number above 0 and at most {}", key, v, at_most));
  return v;
}
double fraction(const py::dict& o, const char* key) {
  const double v = o[key].cast<double>();
  if (!(v >= 0 && v <= 1)) throw std::invalid_argument(fmt::format("{}={}: use a number from 0 to 1", key, v));
  return v;
}
constexpr double kMaxBudgetS = 86400;  // a day per measurement: more is a mistake, or a loop that never ends

// A model step written in Python: the callable runs one step (forward, or a whole training
// step); the description says what it is. RunnableModel::step() runs it on this (the caller's,
// GIL-holding) thread under the step's grad and inference modes, as for every other face.
class PythonModel : public RunnableModel {
 public:
  PythonModel(py::function step, const py::dict& d)
      : step_(std::move(step)),
        name_layers_(d["name_layers"].cast<py::function>()),
        name_(d["name"].cast<std::string>()),
        input_(d["input"].cast<std::string>()),
        kind_(d["device_kind"].cast<std::string>()),
        index_(d["device_index"].cast<int>()),
        parameters_(d["parameters"].cast<int64_t>()),
        train_(d["train"].cast<bool>()) {}
  const std::string& name() const override { return name_; }
  int64_t parameter_count() const override { return parameters_; }
  std::string input_signature() const override { return input_; }
  std::string device_kind() const override { return kind_; }
  int device_index() const override { return index_; }
  bool trains() const override { return train_; }
  void synchronize() override { synchronize_device(kind_, index_); }
  void name_layers(bool on) override { call_python(name_layers_, on); }

 protected:
  void run_step() override { call_python(step_); }

 private:
  py::function step_;
  py::function name_layers_;  // registers (true) or removes (false) the module hooks
  std::string name_, input_, kind_;
  int index_;
  int64_t parameters_;
  bool train_;
};

ModelOptions model_options(const py::dict& d) {
  ModelOptions o;
  o.model = d["name"].cast<std::string>();
  o.in.dtype = d["dtype"].cast<std::string>();
  o.in.train = d["train"].cast<bool>();
  o.in.autocast = d["autocast"].cast<std::string>();
  o.in.device = d["device"].cast<std::string>();
  return o;
}

// Notes go to Python callables (the package routes them to logging and a status line).
Notes python_notes(py::object note, py::object progress) {
  Notes n;
  if (!note.is_none()) {
    n.note = [note](const std::string& text) { call_python(note, text, false); };
    n.error = [note](const std::string& text) { call_python(note, user_message(text), true); };
  }
  if (!progress.is_none()) {
    n.progress = [progress](const std::string& text) { call_python(progress, text); };
    n.progress_done = [progress] { call_python(progress, std::string()); };
  }
  return n;
}

MeasureConfig measure_config(const py::dict& o) {
  MeasureConfig c;
  c.time.max_seconds = positive_number(o, "max_time", kMaxBudgetS);
  c.time.target_rel_ci95 = positive_number(o, "target_ci", 1);
  c.energy = o["energy"].cast<bool>();
  c.energy_max_s = positive_number(o, "energy_max_time", kMaxBudgetS);
  return c;
}

py::dict inventory_of(py::function step, const py::dict& description, std::uint64_t cache_bytes) {
  PythonModel model(std::move(step), description);
  const Inventory inv =
      take_inventory(model, model_options(description), 8, cache_bytes_to_class(model, cache_bytes, nullptr));
  py::dict out;
  out["json"] = to_json(inv).dump();
  out["text"] = to_table(inv);
  return out;
}

py::dict predict_step(py::function step, const py::dict& description, const py::dict& o, py::object note,
                      py::object progress) {
  PythonModel model(std::move(step), description);
  const bool measure = o["measure"].cast<bool>();
  const double target = o["target"].cast<double>();
  PredictOptions p = !measure     ? PredictOptions::predict_only()
                     : target > 0 ? PredictOptions::model_to(target)
                                  : PredictOptions::validate();
  p.model = model_options(description);
  p.db = o["db"].cast<std::string>();
  p.db_create_parent = o["db_is_default"].cast<bool>();
  p.cache = o["cache"].cast<std::string>();
  p.cache_bytes = o["cache_bytes"].cast<std::uint64_t>();
  if (!o["max_time"].is_none())
    p.set_budgets(positive_number(o, "max_time", kMaxBudgetS), positive_number(o, "energy_max_time", kMaxBudgetS),
                  positive_number(o, "energy_max_time_capped", kMaxBudgetS),
                  positive_number(o, "step_max_time", kMaxBudgetS), !o["energy"].cast<bool>());
  else if (!o["energy"].cast<bool>())
    p.op_config.energy = p.step_config.energy = false;
  // None: the command's default.
  if (o.contains("short_loops_after")) p.short_loops_after = fraction(o, "short_loops_after");
  if (o.contains("ops_energy_ci")) p.ops_energy_rel_ci95 = fraction(o, "ops_energy_ci");
  const PredictReport r = run_predict(p, model, python_notes(note, progress));
  py::dict out;
  out["json"] = to_json(r).dump();
  out["text"] = to_text(r);
  return out;
}

// opcost.trace_model: the step traced on the schedule, after `energy`'s validation when given.
TraceRun trace_step(py::function step, const py::dict& description, const py::dict& record, const py::object& energy,
                    py::object note, py::object progress) {
  PythonModel model(std::move(step), description);
  TraceRecordOptions r;
  r.schedule = TraceSchedule{record["wait"].cast<int>(), record["warmup"].cast<int>(), record["active"].cast<int>(),
                             record["repeat"].cast<int>()};
  r.shapes = record["shapes"].cast<bool>();
  r.flops = record["flops"].cast<bool>();
  r.nvtx = record["nvtx"].cast<bool>();
  std::optional<PredictOptions> p;
  if (!energy.is_none()) {
    const py::dict e = energy.cast<py::dict>();
    p = PredictOptions::validate();
    p->db = e["db"].cast<std::string>();
    p->db_create_parent = e["db_is_default"].cast<bool>();
    p->cache = e["cache"].cast<std::string>();
  }
  return trace_model(model, model_options(description), r, p ? &*p : nullptr, python_notes(note, progress));
}

MeasureOptions measure_options(const py::dict& o) {
  MeasureOptions mo;
  mo.replay.device = o["device"].cast<std::string>();
  mo.replay.cache_mode = o["cache"].cast<std::string>();
  mo.replay.seed = o["seed"].cast<uint64_t>();
  mo.replay.autocast = o["autocast"].cast<std::string>();
  mo.config = measure_config(o);
  mo.store = o["store"].cast<bool>();
  mo.db = o["db"].cast<std::string>();
  mo.db_create_parent = o["db_is_default"].cast<bool>();
  if (o.contains("max_items")) mo.max_sweep_items = o["max_items"].cast<std::uint64_t>();  // sweeps only
  return mo;
}

py::dict measure_call(const std::string& op, const std::vector<std::string>& args, const py::dict& o) {
  std::vector<OpCall> calls = {parse_call(op, args)};
  calls.back().origin = "opcost.measure";
  const MeasureOptions mo = measure_options(o);
  Notes notes;  // the outcome says all: nothing to log on the way
  const MeasureRun run = measure_calls(calls, {}, mo, notes);
  const MeasureOutcome& r = run.outcomes.back();
  if (!r.measurement) {  // the one call failed: its error, as the kind of error it is
    if (r.kind == MeasureOutcome::Kind::kBadInput) throw ReplayError(r.error);
    throw std::runtime_error(r.error);
  }
  py::dict out;
  out["json"] = to_json(*r.measurement).dump();
  out["text"] = to_console(*r.measurement);
  out["not_stored"] = r.not_stored;  // the measurement is still returned, never lost
  out["resolution_note"] = r.resolution_note;
  return out;
}

py::dict counts_of(const SweepCounts& c) {
  py::dict d;
  d["done"] = c.done;
  d["failed"] = c.failed;
  d["pending"] = c.pending;
  d["running"] = c.running;
  return d;
}

// A model list's Python models: `signatures` (opcost._sweep._python_signatures) runs one.
PythonModelSignatures python_models_of(py::object signatures) {
  if (signatures.is_none()) return {};
  return [signatures](const ModelConfig& c, const std::string& device) {
    py::dict config;
    config["model"] = c.model;
    config["inputs"] = c.inputs;
    config["dtype"] = c.dtype;
    config["autocast"] = c.autocast;
    config["train"] = c.train;
    config["device"] = device;
    config["label"] = c.label;
    const py::dict out = call_python(signatures, config);
    ModelSignatures sigs;
    sigs.calls = out["calls"].cast<std::vector<std::pair<std::string, std::size_t>>>();
    sigs.autocast = out["autocast"].cast<std::string>();
    return sigs;
  };
}

// A sweep, as `opcost sweep` runs it: workers are `worker_command` (Python's own
// `-m opcost._sweep_worker`), progress and notes go to the Python callables.
py::dict run_sweep_py(const std::string& file, const py::dict& o, const std::string& reset,
                      const std::vector<std::string>& worker_command, py::function note, py::function progress,
                      py::object python_models, std::size_t workers, int64_t max_attempts) {
  SweepOptions so;
  so.measure = measure_options(o);
  so.workers = workers;
  so.lease.max_attempts = max_attempts;
  so.python_models = python_models_of(python_models);
  so.reset = reset == "all"      ? SweepState::Reset::kAll
             : reset == "failed" ? SweepState::Reset::kFailed
                                 : SweepState::Reset::kNone;
  so.worker_command = worker_command;
  Notes notes;
  notes.note = [&](const std::string& t) { call_python(note, t, false); };
  notes.error = [&](const std::string& t) { call_python(note, user_message(t), true); };
  SweepEvents events;
  std::string label;
  events.planned = [&](const SweepPlan& p) { label = p.name; };
  events.progress = [&](std::size_t done, std::size_t before, std::size_t total, double elapsed_s, const std::string&) {
    call_python(progress, label, done, before, total, elapsed_s);
  };
  const SweepRun run = run_sweep(so, file, notes, events);
  if (PyErr_CheckSignals() != 0) throw py::error_already_set();  // Ctrl-C: KeyboardInterrupt, after the state is safe
  py::dict out;
  out["name"] = run.plan.name;
  out["items"] = run.plan.total();
  out["before"] = counts_of(run.before);
  out["after"] = counts_of(run.after);
  out["measured"] = run.measured;
  out["failed"] = run.failed;
  out["crashes"] = run.crashes;
  out["seconds"] = run.seconds;
  out["stopped"] = run.stopped;
  std::vector<std::pair<std::string, std::string>> rejected;
  for (const auto& [item, why] : run.plan.rejected) rejected.emplace_back(item.call, why);
  out["rejected"] = rejected;
  return out;
}

py::dict sweep_status_py(const std::string& file, const py::dict& o, py::object python_models) {
  const SweepStatus s = sweep_status(measure_options(o), file, python_models_of(python_models));
  py::dict out = counts_of(s.counts);
  out["name"] = s.plan.name;
  out["items"] = s.items;
  out["not_enrolled"] = s.not_enrolled;
  out["mean_seconds_per_item"] = s.mean_seconds_per_item;
  out["elsewhere"] = s.elsewhere;
  std::vector<std::pair<std::string, std::string>> failed;
  for (const auto& f : s.failed) failed.emplace_back(f.call, f.reason);
  out["failures"] = failed;
  return out;
}

// A tensor spec of the argument language, parsed by the same parser as every other face.
py::dict tensor_spec(const std::string& text) {
  ArgValue v;
  try {
    v = parse_value(text);
  } catch (const ParseError& e) {
    throw std::invalid_argument(e.what());
  }
  const auto* t = std::get_if<TensorSpec>(&v.v);
  if (!t) throw std::invalid_argument(fmt::format("'{}' is not a tensor like f32[8,3,224,224]", printable(text)));
  py::dict out;
  out["dtype"] = t->dtype;
  out["shape"] = t->shape;
  out["strides"] = t->strides ? py::cast(*t->strides) : py::none();
  out["range"] = t->range ? py::cast(*t->range) : py::none();
  out["device"] = t->device ? py::cast(*t->device) : py::none();
  return out;
}

// The dtype codes and the torch names they stand for ("bf16" -> "bfloat16"), aliases included.
py::dict dtype_torch_names() {
  py::dict out;
  for (const auto& d : dtype_names()) {
    out[d.canonical] = d.torch_name;
    for (const char* alias : d.aliases) out[alias] = d.torch_name;
  }
  return out;
}

}  // namespace

PYBIND11_MODULE(_core, m) {
  m.doc() = "opcost's C++ core: observation, measurement and prediction (use the opcost package, not this)";
  m.attr("__version__") = kOpcostVersion;
  // Errors keep their kind: bad input is a ValueError, a database that cannot be used an
  // OSError; std::invalid_argument (a model or file that cannot be used) is a ValueError.
  py::register_exception<ReplayError>(m, "InputError", PyExc_ValueError);
  // A DatabaseError carries its kind ("full", "read_only", "io", "other"): `python -m opcost`
  // exits as the command line does (read_only is bad input: fix the path).
  static PyObject* database_error = py::register_exception<DatabaseError>(m, "DatabaseError", PyExc_OSError).ptr();
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const DatabaseError& e) {
      using K = DatabaseError::Kind;
      py::object error = py::reinterpret_borrow<py::object>(database_error)(e.what());
      error.attr("kind") = e.kind() == K::kFull       ? "full"
                           : e.kind() == K::kReadOnly ? "read_only"
                           : e.kind() == K::kIo       ? "io"
                                                      : "other";
      PyErr_SetObject(database_error, error.ptr());
    }
  });
  py::register_exception<MeasurementAbandoned>(m, "MeasurementAbandoned", PyExc_RuntimeError);
  // Ctrl-C stops a run at once (see held_interrupt): KeyboardInterrupt to the caller.
  py::register_exception_translator(&translate_interrupted);
  set_interrupt_check(&python_signal_raised);
  m.def("inventory", &inventory_of, py::arg("step"), py::arg("description"), py::arg("cache_bytes") = 0,
        "Observe a few steps of `step` (after a warm-up): the inventory as JSON and text; each call's inputs "
        "classed against `cache_bytes` of cache (0: the GPU's L2)");
  m.def("predict", &predict_step, py::arg("step"), py::arg("description"), py::arg("options"),
        py::arg("note") = py::none(), py::arg("progress") = py::none(),
        "predict / validate / model: the report as JSON and text");
  m.def("trace_model", &trace_step, py::arg("step"), py::arg("description"), py::arg("record"), py::arg("energy"),
        py::arg("note") = py::none(), py::arg("progress") = py::none(),
        "the step traced on a schedule, with energy per call after a validation when `energy` is given");
  m.def("measure", &measure_call, py::arg("op"), py::arg("args"), py::arg("options"),
        "Measure one operator call: its result as JSON and text");
  m.def(
      "observe_only",
      [](py::function fn, bool inputs, bool host_times_only) {
        ObserveOptions o;
        o.inputs = inputs;
        o.host_times_only = host_times_only;
        observe([&] { call_python(fn); }, o);
      },
      py::arg("fn"), py::arg("inputs") = true, py::arg("host_times_only") = false,
      "Run fn with the observer installed (to time what observing adds), recording nothing");
  m.def("sweep", &run_sweep_py, py::arg("file"), py::arg("options"), py::arg("reset"), py::arg("worker_command"),
        py::arg("note"), py::arg("progress"), py::arg("python_models") = py::none(), py::arg("workers") = 1,
        py::arg("max_attempts") = 2, "Run a sweep file through worker processes: how far it got");
  m.def(
      "sweep_worker",
      [](const py::dict& o, const std::string& name, const std::string& scope) {
        const MeasureOptions mo = measure_options(o);
        py::gil_scoped_release release;  // the worker never calls back into Python
        return run_sweep_worker(mo, {name, scope}, SweepState::Lease{}, stdout);
      },
      py::arg("options"), py::arg("sweep_name"), py::arg("sweep_scope"),
      "A sweep's worker: JSON events on standard output");
  m.def("sweep_status", &sweep_status_py, py::arg("file"), py::arg("options"), py::arg("python_models") = py::none());
  m.def("progress_text", &progress_text, py::arg("label"), py::arg("done"), py::arg("total"), py::arg("elapsed_s"),
        py::arg("terminal"), py::arg("done_before") = 0);
  m.def("open_layer_scope", &open_layer_scope, py::arg("name"));
  bind_trace(m);
  m.def("close_layer_scope", &close_layer_scope);
  m.def("default_db_path", &Database::default_path);
  m.def(
      "signature_round_trip",
      [](const std::string& name, const std::string& args) {
        py::dict out;
        out["ok"] = false;
        out["canonical"] = "";
        out["error"] = "";
        try {
          const std::string canonical = canonical_signature(name, args);
          out["canonical"] = canonical;
          if (canonical == args)
            out["ok"] = true;
          else
            out["error"] = fmt::format("reads back as '{}'", elide(canonical, 300));
        } catch (const std::exception& e) {  // the reason is the answer: the caller tabulates it
          out["error"] = printable_one_line(e.what(), 600);
        }
        return out;
      },
      py::arg("name"), py::arg("args"),
      "An inventory signature's round trip: {ok, canonical, error}; ok when it parses, dry-binds on the CPU and "
      "reads back unchanged");
  m.def("tensor_spec", &tensor_spec, py::arg("text"), "Parse a tensor spec of the argument language");
  m.def("dtype_torch_names", &dtype_torch_names, "Every dtype spelling opcost accepts -> torch's name");
}
