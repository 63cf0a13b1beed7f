#pragma once
// The shared energy loop's batches (Runner::measure_group, shared_energy_loop.cpp) as they
// complete: the timeline its counter windows are cut from (core/energy/shared_windows.h).
// Header-only: one LibTorch translation unit uses it, and a test.
#include <ATen/DeviceAccelerator.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/add.h>
#include <c10/core/Event.h>
#include <c10/core/Stream.h>

#include <cstddef>
#include <optional>
#include <vector>

#include "core/energy/duty_cycle.h"
#include "core/energy/monitor.h"
#include "core/energy/shared_windows.h"
#include "torch/graph_batch.h"
#include "torch/replay.h"

namespace opcost {

// The shared loop's batches as they complete: the timeline the windows are cut from. On CUDA
// each batch's end is an event with timing, read on the GPU's own clock and mapped to the host's
// through one anchor event recorded on an idle device: a batch's span is from the GPU's end of
// the batch before to its own end. The host sees an event complete only when it next waits,
// which is late by up to a batch and by whatever held the host (a preemption, an NVML read of
// several milliseconds on the monitor's thread); timed by the host, such batches looked stalled
// and their windows were left out (on the H100, 19 of a 15-operator group's 74 windows). Up to
// kBatchesInFlight batches are queued, so that a host held up for ~a dozen milliseconds leaves
// the GPU with work (one that stalls it still shows, as a span that holds the GPU's idle time).
class GroupLoop {
 public:
  GroupLoop(bool cuda, c10::DeviceIndex index, std::size_t ops)
      : cuda_(cuda),
        index_(index),
        stream_(cuda ? at::accelerator::getCurrentStream(index)
                     : c10::Stream(c10::Stream::DEFAULT, c10::Device(c10::kCPU))),
        issued_(ops, 0) {
    // The first completion only opens the timeline (make_shared_windows).
    if (!cuda_) {
      timeline_.push_back({now_s(), 0, 0.0});
      return;
    }
    for (auto& ev : ends_) ev.emplace(c10::DeviceType::CUDA, c10::EventFlag::BACKEND_DEFAULT);
    start_.emplace(c10::DeviceType::CUDA, c10::EventFlag::BACKEND_DEFAULT);
    anchor_.emplace(c10::DeviceType::CUDA, c10::EventFlag::BACKEND_DEFAULT);
    // On an idle device the anchor runs as soon as it is recorded: its host time is read a few
    // microseconds after its GPU time, against windows of ~100 ms.
    at::accelerator::synchronizeDevice(index_);
    anchor_->record(stream_);
    anchor_->synchronize();
    anchor_host_s_ = now_s();
    timeline_.push_back({anchor_host_s_, 0, 0.0});
  }

  // Issues `calls` calls of operator `op`, or one replay of `graph` (its calls()); on the CPU
  // they ran as they were issued.
  void issue_batch(PreparedCall& call, std::size_t op, std::size_t calls, GraphBatch* graph) {
    if (graph) {
      graph->replay();
      calls = graph->calls();
    } else {
      for (std::size_t i = 0; i < calls; ++i) call.call();
    }
    issued_[op] += calls;
    if (!cuda_) {
      timeline_.push_back({now_s(), op, double(calls)});
      return;
    }
    const std::size_t slot = k_ % kBatchesInFlight;
    if (k_ >= kBatchesInFlight) completed(slot);  // the batch kBatchesInFlight before: its slot is reused
    ends_[slot]->record(stream_);
    in_flight_[slot] = {0, op, double(calls)};
    ++k_;
  }

  // A duty-cycled loop's batch (CUDA only; GapCharge in core/energy/shared_windows.h): issued
  // alone, behind an event that marks when the GPU reached it, and waited for. The span from the
  // gap before it to that start (the host issuing it while the GPU idles) is a completion of the
  // gaps' operator `gap_op` with no calls, charged as gap time, so that the batch's span is its
  // kernels' alone, as the duty-cycled loop of one operator times its bursts with events.
  void issue_burst(PreparedCall& call, std::size_t op, std::size_t calls, GraphBatch* graph, std::size_t gap_op) {
    if (!cuda_) {
      issue_batch(call, op, calls, graph);
      return;
    }
    drain();
    start_->record(stream_);
    issue_batch(call, op, calls, graph);
    drain();
    const GroupCompletion batch = timeline_.back();
    timeline_.back() = {anchor_host_s_ + anchor_->elapsedTime(*start_) * 1e-3, gap_op, 0.0};
    timeline_.back().t_s = std::max(timeline_.back().t_s, timeline_[timeline_.size() - 2].t_s);
    timeline_.push_back(batch);
  }

  // The gap after the burst just issued (issue_burst): the GPU does what the gap probe does
  // (`tiny` + `tiny`, launch-bound) until the burst's span × (1 − d) / d has passed since its end,
  // recorded as a completion of `gap_op` (its calls the additions). The gap is timed from the
  // burst's end as the host reads it: the GPU's clock mapped to the host's may run a little late
  // or early (an anchor read after a delay), and a gap timed from it would be that much off.
  void gap(std::size_t gap_op, double busy_share, const at::Tensor& tiny) {
    if (!cuda_ || timeline_.size() < 2) return;
    const double burst_s = timeline_.back().t_s - timeline_[timeline_.size() - 2].t_s;
    const double gap_end_s = now_s() + gap_after_burst_s(burst_s, busy_share);
    std::size_t adds = 0;
    do {  // at least one addition: a gap of none would leave its span without a pace to judge
      (void)at::add(tiny, tiny);
      ++adds;
    } while (now_s() < gap_end_s);
    ends_[0]->record(stream_);
    in_flight_[0] = {0, gap_op, double(adds)};
    k_ = 1;
    drain();
  }

  // Waits for the batches in flight, in order: the timeline's end.
  void finish() {
    if (!cuda_) return;
    drain();
    at::accelerator::synchronizeDevice(index_);
  }

  const std::vector<GroupCompletion>& timeline() const { return timeline_; }
  std::size_t issued(std::size_t op) const { return issued_[op]; }

  // Two batches in flight left the GPU idle whenever the host was held ~4 ms; eight, ~16 ms.
  static constexpr std::size_t kBatchesInFlight = 8;

 private:
  // The batches in flight completed, in order, none left in flight.
  void drain() {
    for (std::size_t k = k_ > kBatchesInFlight ? k_ - kBatchesInFlight : 0; k < k_; ++k)
      completed(k % kBatchesInFlight);
    k_ = 0;
  }

  void completed(std::size_t slot) {
    ends_[slot]->synchronize();
    GroupCompletion c = in_flight_[slot];
    c.t_s = anchor_host_s_ + anchor_->elapsedTime(*ends_[slot]) * 1e-3;  // elapsedTime: milliseconds
    timeline_.push_back(c);
  }

  bool cuda_;
  c10::DeviceIndex index_;
  c10::Stream stream_;
  std::optional<c10::Event> anchor_, start_;
  double anchor_host_s_ = 0;
  std::optional<c10::Event> ends_[kBatchesInFlight];
  GroupCompletion in_flight_[kBatchesInFlight];
  std::vector<GroupCompletion> timeline_;
  std::vector<std::size_t> issued_;
  std::size_t k_ = 0;
};

}  // namespace opcost
