#pragma once
// What a trace of a run holds, in libkineto's manner: host ranges (steps, layers, operator
// calls) and device activities (kernels, copies, sets), each on its own clock-aligned time
// line, and the ties between them (a kernel to the operator call that launched it, a call to
// its layer). Sources fill it (the Kineto recorder, importers); the writers and the tables
// read it. Times are nanoseconds on the source's clock. Torch-free.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/predict/prediction.h"

namespace opcost {

// A profiled step (ProfilerStep#N) or a layer: a module's forward, named by its module path.
struct HostRange {
  std::string name;
  uint64_t thread = 0;
  int64_t start_ns = 0, end_ns = 0;
  int depth = 0;    // layers: how many layers enclose it (0: a top-level module)
  int parent = -1;  // layers: the innermost enclosing layer (index into TraceRun::layers)
  int64_t duration_ns() const { return end_ns - start_ns; }
};

// An outermost dispatcher call (aten::linear, with the aten::addmm inside it folded in).
struct OpActivity {
  std::string name;
  std::string shapes;  // its inputs' shapes, "[8, 64], [64]" (empty when not recorded)
  uint64_t thread = 0;
  int64_t start_ns = 0, end_ns = 0;
  // Correlation ids of this call and of every dispatcher call nested in it: a kernel launched
  // from any of them is this call's.
  std::vector<uint64_t> correlations;
  uint64_t flops = 0;  // as the profiler estimates them (0: unknown)
  // Autograd: the sequence numbers of the graph nodes this call (or one nested in it) made in
  // the forward pass; a backward call's, that of the node whose backward ran it (-1: none).
  std::vector<int64_t> forward_sequence;
  int64_t backward_of = -1;
  int layer = -1;  // innermost enclosing layer (index into TraceRun::layers), -1: none
  int step = -1;   // enclosing step (index into TraceRun::steps), -1: none
  // Not a call the trace recorded: the host's work between two synchronisations, standing for
  // the calls there when the device activities they launched cannot be told apart (tie_activities).
  bool inferred = false;
  int64_t duration_ns() const { return end_ns - start_ns; }
};

// A kernel, memcpy or memset on the device.
struct DeviceActivity {
  std::string name;
  std::string kind;  // "kernel", "memcpy", "memset"
  int device = 0;
  int64_t stream = 0;
  int64_t start_ns = 0, end_ns = 0;
  uint64_t linked_correlation = 0;  // the host call that launched it (0: unknown)
  int op = -1;                      // the tied operator call (index into TraceRun::ops), -1: untied
  bool inferred = false;            // tied by synchronisations, not by a correlation id
  int64_t duration_ns() const { return end_ns - start_ns; }
};

// A quantity sampled over the run (GPU power, SM clock, the energy counter): a counter track.
struct CounterTrack {
  std::string name;  // with its unit: "GPU power (W)"
  int device = 0;
  std::vector<std::pair<int64_t, double>> samples;  // (time ns, value)
};

// The energy attributed to one traced call (energy_attribution.h): its kernels' time × its
// operator's active power, measured with the operator replayed alone, plus the GPU's idle time
// before its kernels × the GPU's power between kernels. Sums over the call's kept steps.
struct CallEnergy {
  double kernels_mJ = 0, gaps_mJ = 0;
  double gap_us = 0;         // idle time it owns, as long as in the untraced step
  double kernels_ci_mJ = 0;  // 95% half-width from its operator's energy measurement
  int64_t measurement = -1;  // that measurement: calls sharing one share its error
  double mJ() const { return kernels_mJ + gaps_mJ; }
  // Its 95% half-width: its operator's, and the idle power's over the idle time it owns.
  double ci_mJ(double gap_power_ci_W) const { return kernels_ci_mJ + gap_us * gap_power_ci_W * 1e-3; }
};

// A run's attributed energy in total, and the check against the untraced steps' measured
// energy. Figures are sums over the kept steps.
struct EnergyTotals {
  double gap_power_W = 0, gap_power_ci_W = 0;
  // The untraced step's idle time over the traced one: the profiler slows the host, and the
  // GPU waits for it longer between kernels.
  double gap_scale = 1;
  double kernels_mJ = 0, gaps_mJ = 0;
  double measured_mJ = 0, measured_ci_mJ = 0;  // the untraced step's × the kept steps
  // Device time whose energy is not attributed: kernels of calls without a measured power, or
  // tied to no call; and those calls, by reason.
  double unattributed_us = 0;
  std::map<std::string, std::size_t> calls_without_power;
  double attributed_mJ() const { return kernels_mJ + gaps_mJ; }
  double error() const { return measured_mJ > 0 ? attributed_mJ() / measured_mJ - 1 : 0; }
};

// ...and each call's share of it.
struct EnergyAttribution : EnergyTotals {
  std::vector<CallEnergy> calls;  // by TraceRun::ops index
};

struct TraceRun {
  std::string source;  // "opcost (Kineto)", "torch.profiler export", ...
  std::string device;  // the GPU model, or the CPU
  std::vector<HostRange> steps;
  std::vector<HostRange> layers;  // ordered by start
  std::vector<OpActivity> ops;    // ordered by start
  std::vector<DeviceActivity> device_activities;
  // Backward functions autograd ran (BACKWARD_FUNCTION records), each with the sequence number
  // of its forward node: the calls inside one are tied to the forward call's layer.
  struct BackwardRange {
    uint64_t thread = 0;
    int64_t start_ns = 0, end_ns = 0;
    int64_t sequence = -1;
  };
  std::vector<BackwardRange> backward_ranges;
  // Host calls that waited for the device (cudaDeviceSynchronize, cudaStreamSynchronize, ...):
  // where device activities carry no usable correlation id, their launches are inferred from
  // these (tie_activities).
  std::vector<HostRange> synchronizations;
  std::vector<CounterTrack> counters;
  // Untraced steps measured as `opcost validate` measures a step (opcost trace --energy): the
  // figure a run's per-layer energies are to add up to.
  std::optional<StepMeasurement> measured_step;
  // Energy per call (opcost trace --energy), or why there is none.
  std::optional<EnergyAttribution> energy;
  std::string energy_why;
  std::string counters_unavailable;  // why there are none ("" when there are, or none were asked for)
  // Device activities that could not be tied to an operator call, by reason.
  std::map<std::string, std::size_t> untied;
  // Imports: events skipped as malformed (a ts that is not a number, a negative dur, ...), and
  // the first one's place and fault ("event 12 at byte 3456: dur -5 is out of range ...").
  std::size_t skipped_events = 0;
  std::string first_skipped;
};

// The run's earliest time on its clock: of its steps, layers, calls, device activities and
// counter samples (0 for an empty run). The trace files count from it.
int64_t earliest_ns(const TraceRun& run);

// Dispatcher calls nested in another on the same thread fold into the outermost one, which
// takes their correlation ids and autograd sequence numbers (a kernel launched by aten::addmm
// inside aten::linear is aten::linear's). `calls` hold one correlation id each, as a profiler
// records them.
std::vector<OpActivity> fold_nested_calls(std::vector<OpActivity> calls);

// Ties the run: each call to its innermost layer (by time containment on its own thread) and
// to its step (by time, on any thread), and each device activity to the call whose
// correlation ids include its own. A backward call (inside a backward range, on autograd's
// thread) takes the layer of the forward call that made its node. Counts what stays untied in
// `run.untied`, by reason.
//
// A device activity without a usable correlation id is inferred from the synchronisations, as
// one does by hand with torch.cuda.synchronize() between layers: the first synchronisation
// that ended after it waited for it, so the host launched it between the previous
// synchronisation's end and that one's start. If one call ran on that thread then, the
// activity is that call's; if several did, it goes to an inferred call spanning them (named
// "(between synchronisations)"), whose layer is the innermost one around them all. Both are
// marked inferred.
void tie_activities(TraceRun& run);

}  // namespace opcost
