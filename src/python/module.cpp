// opcost._core: the Python package's face over the workflow library. Python runs the user's
// model; this module observes it, measures operators and steps, and predicts, through the
// same workflows as the command line. Results cross as JSON documents (the CLI's own), which
// the Python side wraps in objects. No LibTorch header is needed here: the workflows' headers
// are torch-free, and the library links the torch that Python has loaded.
#include <fmt/format.h>
#include <pybind11/functional.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <optional>

#include "cli/command_line.h"
#include "core/compare/variant_spec.h"
#include "core/report/progress.h"
#include "core/report/report.h"
#include "core/spec/arg_value.h"
#include "core/spec/cache_mode.h"
#include "core/spec/op_call.h"
#include "core/store/database.h"
#include "core/store/sweep_state.h"
#include "core/sweep/sweep_limits.h"
#include "core/sys/interrupt.h"
#include "core/text/text.h"
#include "core/trace/table.h"
#include "core/version.h"
#include "python/estimate_bindings.h"
#include "python/trace_bindings.h"
#include "torch/observer.h"
#include "torch/replay.h"
#include "torch/runner.h"
#include "workflow/compare.h"
#include "workflow/measure.h"
#include "workflow/model_inventory.h"
#include "workflow/options.h"
#include "workflow/predict.h"
#include "workflow/report_html.h"
#include "workflow/reporters/reporter.h"
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

// The Python face of the options registry (workflow/options.h): keyword arguments by the
// registry's names, each converted by its option's type, checked and applied on its own. None
// leaves the option at the command's default.
std::string python_type_name(const OptionInfo& spec) {
  switch (spec.type) {
    case OptionType::kFlag:
      return "True or False";
    case OptionType::kNumber:
      return spec.unit == "s" ? "a number of seconds" : "a number";
    case OptionType::kWhole:
      return "a whole number";
    case OptionType::kBytes:
      return "a whole number of bytes";
    case OptionType::kText:
      return "a string";
  }
  return "a value";
}

std::optional<OptionValue> python_option_value(const OptionInfo& spec, const py::handle& v) {
  if (v.is_none()) return std::nullopt;
  PyObject* p = v.ptr();
  if (PyBool_Check(p)) return OptionValue(v.cast<bool>());
  if (PyUnicode_Check(p)) return OptionValue(v.cast<std::string>());
  if (PyLong_Check(p) || (PyIndex_Check(p) && !PyFloat_Check(p))) {
    const py::int_ whole = py::reinterpret_steal<py::int_>(PyNumber_Index(p));
    if (!whole) throw py::error_already_set();
    int overflow = 0;
    const long long w = PyLong_AsLongLongAndOverflow(whole.ptr(), &overflow);
    // Past int64: its range check refuses it by value (a double of it), naming the option.
    if (overflow) return OptionValue(PyLong_AsDouble(whole.ptr()));
    return OptionValue(std::int64_t(w));
  }
  if (PyFloat_Check(p) || PyObject_HasAttrString(p, "__float__")) return OptionValue(v.cast<double>());
  throw OptionTypeError(fmt::format("{} must be {}, not {}", spec.both_spellings(), python_type_name(spec),
                                    printable(elide(py::repr(v).cast<std::string>(), 60), false)));
}

// Applies `given`'s registry options to `o`, skipping `run_keys` (the run's own: db, store...).
// An option the command does not offer is refused, as the command line refuses it.
template <typename Options>
void apply_python_options(Options& o, const std::vector<OptionSpec<Options>>& specs, OptionCommand command,
                          std::string_view command_name, const py::dict& given,
                          std::initializer_list<std::string_view> run_keys) {
  for (auto [key, value] : given) {
    const std::string name = py::str(key);
    if (std::find(run_keys.begin(), run_keys.end(), name) != run_keys.end()) continue;
    const OptionSpec<Options>* spec = nullptr;
    for (const auto& s : specs)
      if (s.name == name) spec = &s;
    if (!spec || !spec->offered_by(command))
      throw std::invalid_argument(fmt::format("{} takes no option '{}'", command_name, printable(elide(name, 60))));
    if (const auto v = python_option_value(*spec, value)) spec->set(o, checked_option_value(*spec, *v));
  }
}

OptionCommand predict_command(const std::string& name) {
  if (name == "predict") return kPredictCommand;
  if (name == "validate") return kValidateCommand;
  if (name == "model") return kModelCommand;
  throw std::invalid_argument(fmt::format("unknown command '{}' (use predict, validate or model)", printable(name)));
}

// opcost._core.option_specs(command): the registry as the Python package derives its keyword
// arguments and its command line from it, the defaults the command's own.
template <typename Options>
py::list option_specs_of(const std::vector<OptionSpec<Options>>& specs, OptionCommand command,
                         const Options& defaults) {
  static constexpr const char* kTypes[] = {"flag", "number", "whole", "bytes", "text"};
  py::list out;
  for (const auto& s : specs) {
    if (!s.offered_by(command)) continue;
    py::dict d;
    d["name"] = std::string(s.name);
    d["flag"] = std::string(s.flag);
    d["type"] = kTypes[int(s.type)];
    d["unit"] = std::string(s.unit);
    d["help"] = std::string(s.help);
    d["default"] = std::visit([](const auto& x) { return py::cast(x); }, s.get(defaults));
    d["low"] = s.range.low;
    d["low_included"] = s.range.low_included;
    d["high"] = s.range.high;
    d["zero_allowed"] = s.range.zero_allowed;
    py::list choices;
    for (auto c : s.choices) choices.append(std::string(c));
    d["choices"] = choices;
    d["flag_sets"] = s.flag_sets;
    d["identity"] = s.identity;
    out.append(d);
  }
  return out;
}

py::list option_specs_py(const std::string& command) {
  if (command == "compare") return option_specs_of(compare_option_specs(), kCompareCommand, CompareOptions{});
  if (command == "measure") return option_specs_of(measure_option_specs(), kMeasureCommand, MeasureOptions{});
  if (command == "sweep") return option_specs_of(measure_option_specs(), kSweepCommand, MeasureOptions{});
  const OptionCommand c = predict_command(command);
  return option_specs_of(predict_option_specs(), c, predict_preset(c));
}

// A model step written in Python: the callable runs one step (forward, or a whole training
// step); the description says what it is. RunnableModel::step() runs it on this (the caller's,
// GIL-holding) thread under the step's grad and inference modes, as for every other face.
class PythonModel : public RunnableModel {
 public:
  PythonModel(py::function step, const py::dict& d)
      : step_(std::move(step)),
        name_layers_(d["name_layers"].cast<py::function>()),
        watch_compiled_(d.contains("watch_compiled") ? d["watch_compiled"].cast<py::function>() : py::function()),
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
  void watch_compiled_kernels(bool on, KernelRecords records) override {
    if (watch_compiled_) call_python(watch_compiled_, on, records == KernelRecords::kNamesOnly);
  }

 protected:
  void run_step() override { call_python(step_); }

 private:
  py::function step_;
  py::function name_layers_;     // registers (true) or removes (false) the module hooks
  py::function watch_compiled_;  // wraps (true) or unwraps (false) generated kernels' launches
  std::string name_, input_, kind_;
  int index_;
  int64_t parameters_;
  bool train_;
};

// A replay of a kernel torch.compile generated, made by Python (opcost/_compiled.py): `fn()`
// launches it once on its inputs (asynchronous on CUDA, as an operator's replay).
class GeneratedKernelCall final : public PreparedCall {
 public:
  GeneratedKernelCall(py::object fn, CallInfo info) : fn_(std::move(fn)), record_name_(info.op + "." + info.overload) {
    info_ = std::move(info);
  }
  ~GeneratedKernelCall() override {
    if (!Py_IsInitialized()) {  // the process is ending: leave the object to it
      fn_.release();
      return;
    }
    py::gil_scoped_acquire gil;
    fn_ = py::object();
  }
  // In a record of its own, as in the model, so that a kernel trace of the replays (validate's
  // kernel check) ties the launched kernel to this call; inactive, and next to free, elsewhere.
  void call() override {
    open_compiled_kernel_record(record_name_, {});
    try {
      call_python(fn_);
    } catch (...) {
      close_compiled_kernel_record();
      throw;
    }
    close_compiled_kernel_record();
  }

 private:
  py::object fn_;
  std::string record_name_;
};

// Registers Python's maker of generated kernels' replays (None: unregisters). The maker is
// called as maker(op, overload, args, device, cache_mode, cold_footprint_bytes) and returns {"call", "dtype",
// "device_kind", "device_index", "input_bytes", "input_sets"}; its error refuses the replay.
void set_python_kernel_replayer(const py::object& maker) {
  if (maker.is_none()) {
    set_generated_kernel_replayer({});
    return;
  }
  // Whoever drops the last reference (the unregistering call, or a copy a replay made) takes the
  // GIL for it; after Python has shut down the object is left alone (the process is ending).
  std::shared_ptr<py::object> held(new py::object(maker), [](py::object* o) {
    if (!Py_IsInitialized()) return;
    py::gil_scoped_acquire gil;
    delete o;
  });
  set_generated_kernel_replayer([held](const OpCall& call, const ReplayOptions& opt) -> std::unique_ptr<PreparedCall> {
    py::gil_scoped_acquire gil;
    try {
      const py::dict made = call_python(*held, call.op, call.overload, format_args(call.args), opt.device,
                                        opt.cache_mode, opt.cold_footprint_bytes);
      CallInfo info =
          generated_kernel_info(call, opt, made["dtype"].cast<std::string>(), made["device_kind"].cast<std::string>(),
                                made["device_index"].cast<int>(), made["input_bytes"].cast<std::size_t>(),
                                made["input_sets"].cast<std::size_t>());
      return std::make_unique<GeneratedKernelCall>(made["call"], std::move(info));
    } catch (const py::error_already_set& e) {
      throw ReplayError(fmt::format("{}: {}", call.display_name(), printable_one_line(e.what(), 300)));
    } catch (const py::cast_error& e) {
      throw ReplayError(fmt::format("{}: the replay's description is malformed ({})", call.display_name(), e.what()));
    }
  });
}

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

py::dict inventory_of(py::function step, const py::dict& description, std::uint64_t cache_bytes) {
  PythonModel model(std::move(step), description);
  const Inventory inv =
      take_inventory(model, model_options(description), 8, cache_bytes_to_class(model, cache_bytes, nullptr));
  py::dict out;
  out["json"] = to_json(inv).dump();
  out["text"] = make_reporter(ReportFormat::kText)->inventory(inv);
  return out;
}

// The dict opcost.predict / validate pass: "command" (predict, validate or model), the database
// ("db", "db_is_default") and the registry's options by name.
PredictOptions predict_options(const py::dict& o) {
  const std::string command = o["command"].cast<std::string>();
  PredictOptions p = predict_preset(predict_command(command));
  p.db = o["db"].cast<std::string>();
  p.db_create_parent = o["db_is_default"].cast<bool>();
  apply_python_options(p, predict_option_specs(), predict_command(command), "opcost." + command, o,
                       {"command", "db", "db_is_default"});
  return p;
}

py::dict predict_step(py::function step, const py::dict& description, const py::dict& o, py::object note,
                      py::object progress) {
  PythonModel model(std::move(step), description);
  PredictOptions p = predict_options(o);
  p.model = model_options(description);
  const PredictReport r = run_predict(p, model, python_notes(note, progress));
  py::dict out;
  out["json"] = to_json(r).dump();
  out["text"] = make_reporter(ReportFormat::kText)->prediction(r);
  return out;
}

// opcost.compare's options dict: the compare registry's options by name (workflow/options.h),
// each checked as the command line checks it.
CompareOptions compare_options(const py::dict& o) {
  CompareOptions c;
  apply_python_options(c, compare_option_specs(), kCompareCommand, "opcost.compare", o, {});
  c.check();
  return c;
}

py::dict compare_defaults() {
  py::dict d;
  for (const auto& s : compare_option_specs())
    d[py::str(std::string(s.name))] = std::visit([](const auto& x) { return py::cast(x); }, s.get(CompareOptions{}));
  return d;
}

// opcost.compare: each variant a step written in Python (the first the baseline).
py::dict compare_steps(const py::list& variants, const py::dict& o, py::object note, py::object progress) {
  const CompareOptions options = compare_options(o);
  std::vector<std::unique_ptr<PythonModel>> models;
  std::vector<CompareVariant> list;
  for (const auto& item : variants) {
    const py::dict v = item.cast<py::dict>();
    const py::dict description = v["model"].cast<py::dict>();
    models.push_back(std::make_unique<PythonModel>(v["step"].cast<py::function>(), description));
    list.push_back(CompareVariant{v["name"].cast<std::string>(), v["description"].cast<std::string>(),
                                  models.back().get(), model_options(description)});
  }
  const CompareReport r = run_compare(list, options, python_notes(note, progress));
  py::dict out;
  out["json"] = to_json(r).dump();
  out["text"] = render_compare(r, false, options.layer_rows);
  return out;
}

py::dict variant_dict(const std::string& text) {
  const VariantSpec v = parse_variant(text);
  py::dict d;
  d["name"] = v.name;
  d["dtype"] = v.dtype;
  d["autocast"] = v.autocast;
  d["channels_last"] = v.channels_last;
  d["compile"] = v.compile;
  d["compile_mode"] = v.compile_mode;
  d["int8"] = v.int8;
  d["description"] = v.description;
  return d;
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
    p = predict_preset(kValidateCommand);
    p->db = e["db"].cast<std::string>();
    p->db_create_parent = e["db_is_default"].cast<bool>();
    apply_python_options(*p, predict_option_specs(), kValidateCommand, "opcost.trace_model(energy=True)", e,
                         {"db", "db_is_default"});
  }
  return trace_model(model, model_options(description), r, p ? &*p : nullptr, python_notes(note, progress));
}

// The dict opcost.measure and the sweeps pass: the run's own keys ("store", "db", "db_is_default",
// and a sweep's "max_items") and the registry's options by name.
MeasureOptions measure_options(const py::dict& o, OptionCommand command = kMeasureCommand) {
  MeasureOptions mo;
  mo.store = o.contains("store") ? o["store"].cast<bool>() : true;
  mo.db = o["db"].cast<std::string>();
  mo.db_create_parent = o["db_is_default"].cast<bool>();
  if (o.contains("max_items")) mo.max_sweep_items = o["max_items"].cast<std::uint64_t>();  // sweeps only
  apply_python_options(mo, measure_option_specs(), command,
                       command == kSweepCommand ? "opcost.sweep" : "opcost.measure", o,
                       {"store", "db", "db_is_default", "max_items"});
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
  out["text"] = make_reporter(ReportFormat::kText)->measured(*r.measurement, "", false);
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
  so.measure = measure_options(o, kSweepCommand);
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
  const MeasureOptions mo = measure_options(o, kSweepCommand);
  const SweepStatus s = sweep_status(mo, file, python_models_of(python_models));
  py::dict out = counts_of(s.counts);
  out["text"] = make_reporter(ReportFormat::kText)->sweep_status({s, file, mo});  // as `opcost sweep status`
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

namespace {

// Errors keep their kinds across the boundary.
void bind_errors(py::module_& m) {
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
  // An option of the wrong type (text for a number): Python's TypeError, naming the option.
  py::register_exception<OptionTypeError>(m, "OptionTypeError", PyExc_TypeError);
  // Ctrl-C stops a run at once (see held_interrupt): KeyboardInterrupt to the caller.
  py::register_exception_translator(&translate_interrupted);
  set_interrupt_check(&python_signal_raised);
}

// The workflows: inventory, predict / validate / model, trace, measure, sweep, and the options registry.
void bind_workflows(py::module_& m) {
  m.def("inventory", &inventory_of, py::arg("step"), py::arg("description"), py::arg("cache_bytes") = 0,
        "Observe a few steps of `step` (after a warm-up): the inventory as JSON and text; each call's inputs "
        "classed against `cache_bytes` of cache (0: the GPU's L2)");
  m.def("predict", &predict_step, py::arg("step"), py::arg("description"), py::arg("options"),
        py::arg("note") = py::none(), py::arg("progress") = py::none(),
        "predict / validate / model: the report as JSON and text");
  m.def("trace_model", &trace_step, py::arg("step"), py::arg("description"), py::arg("record"), py::arg("energy"),
        py::arg("note") = py::none(), py::arg("progress") = py::none(),
        "the step traced on a schedule, with energy per call after a validation when `energy` is given");
  m.def("compare", &compare_steps, py::arg("variants"), py::arg("options"), py::arg("note") = py::none(),
        py::arg("progress") = py::none(),
        "compare: variants [{name, description, step, model}] (the first the baseline) in interleaved rounds and "
        "traced per layer: the report as JSON and text");
  m.def("compare_defaults", &compare_defaults, "compare's option defaults (CompareOptions), by registry name");
  m.def(
      "check_compare_options", [](const py::dict& o) { compare_options(o); }, py::arg("options"),
      "Checks compare's options before any variant is built: ValueError/TypeError naming the bad one");
  m.def("parse_variant", &variant_dict, py::arg("text"),
        "a built-in variant's name ('bf16', 'autocast-fp16', 'channels_last+compile') as what it does; "
        "ValueError naming the part at fault");
  m.def("option_specs", &option_specs_py, py::arg("command"),
        "The options registry as `command` (measure, sweep, predict, validate, model, compare) offers it: a list of "
        "{name, flag, type, unit, help, default, low, low_included, high, zero_allowed, choices, flag_sets, "
        "identity}");
  m.def(
      "check_options",
      [](const std::string& command, const py::dict& o) {
        if (command == "measure" || command == "sweep")
          return settings_of(measure_options(o, command == "sweep" ? kSweepCommand : kMeasureCommand));
        return settings_of(predict_options(o));
      },
      py::arg("command"), py::arg("options"),
      "Checks a run's options as `command` applies them (before any model runs): the settings they make, "
      "[(name, text)], or ValueError/TypeError naming the bad one");
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
        py::arg("max_attempts") = SweepLease{}.max_attempts,
        "Run a sweep file through worker processes: how far it got");
  m.def(
      "sweep_worker",
      [](const py::dict& o, const std::string& name, const std::string& scope) {
        const MeasureOptions mo = measure_options(o, kSweepCommand);
        py::gil_scoped_release release;  // the worker never calls back into Python
        return run_sweep_worker(mo, {name, scope}, SweepState::Lease{}, stdout);
      },
      py::arg("options"), py::arg("sweep_name"), py::arg("sweep_scope"),
      "A sweep's worker: JSON events on standard output");
  m.def("sweep_status", &sweep_status_py, py::arg("file"), py::arg("options"), py::arg("python_models") = py::none());
}

// What the package's faces share with the command line: its command table, progress text, layer scopes,
// the argument language.
void bind_faces(py::module_& m) {
  // The command line's command table, which `python -m opcost` builds its own from (faces).
  m.def(
      "command_table", [] { return describe_command_line().dump(); },
      "The command line's commands and options (JSON): python -m opcost offers the same");
  // The command line itself, in this process: what `python -m opcost` runs for a command or a
  // model (built-in, TorchScript) it has no Python path for. Ctrl-C ends it as any run here.
  m.def(
      "run_command_line",
      [](std::vector<std::string> args) {
        args.insert(args.begin(), "opcost");
        std::vector<char*> argv;
        for (auto& a : args) argv.push_back(a.data());
        std::fflush(stdout);
        const int rc = run_command_line(int(argv.size()), argv.data());
        std::fflush(stdout);
        return rc;
      },
      py::arg("args"), "Run opcost's command line with these arguments: its exit status");
  // opcost.report(): the command line's report (workflow/report_html.h), of a file or of a result's JSON text.
  m.def(
      "write_report_file",
      [](const std::string& input, const std::string& output) { return report_kind_name(write_report(input, output)); },
      py::arg("input"), py::arg("output"), "opcost report INPUT -o OUTPUT: the kind written");
  m.def(
      "write_report",
      [](const std::string& json_text, const std::string& source, const std::string& output) {
        return report_kind_name(write_report_of(parse_result_json(json_text, source), source, output));
      },
      py::arg("json_text"), py::arg("source"), py::arg("output"), "The page of a result's JSON text: the kind written");
  m.def("progress_text", &progress_text, py::arg("label"), py::arg("done"), py::arg("total"), py::arg("elapsed_s"),
        py::arg("terminal"), py::arg("done_before") = 0);
  m.def("open_layer_scope", &open_layer_scope, py::arg("name"), py::arg("names_backward_layer") = false);
  bind_trace(m);
  bind_estimate(m);
  m.def("close_layer_scope", &close_layer_scope);
  // A launch of a kernel torch.compile generated (opcost/_compiled.py): its arguments as text, or
  // none where a host-timing round records its name alone (KernelRecords::kNamesOnly).
  m.def("set_generated_kernel_replayer", &set_python_kernel_replayer, py::arg("maker"));
  m.def("open_compiled_kernel_record", &open_compiled_kernel_record, py::arg("record_name"),
        py::arg("args") = std::vector<std::string>{}, py::arg("touches") = std::vector<int64_t>{});
  m.def("close_compiled_kernel_record", &close_compiled_kernel_record);
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
  m.def("cold_input_sets", &cold_input_sets, py::arg("cold_bytes"), py::arg("footprint_bytes"),
        "Input sets a cold-cache replay rotates through (core/spec/cache_mode.h)");
  m.def("dtype_torch_names", &dtype_torch_names, "Every dtype spelling opcost accepts -> torch's name");
}

}  // namespace

PYBIND11_MODULE(_core, m) {
  m.doc() = "opcost's C++ core: observation, measurement and prediction (use the opcost package, not this)";
  m.attr("__version__") = kOpcostVersion;
  // Defaults of the package's own keywords that are not measuring options (those are in
  // option_specs): read here from the one place each is written in C++.
  py::dict defaults;
  defaults["max_attempts"] = SweepLease{}.max_attempts;
  defaults["progress_every"] = kPlainProgressEverySeconds;
  defaults["table_rows"] = kTraceTableRows;
  defaults["max_items"] = kDefaultMaxSweepItems;
  m.attr("DEFAULTS") = defaults;
  bind_errors(m);
  bind_workflows(m);
  bind_faces(m);
}
