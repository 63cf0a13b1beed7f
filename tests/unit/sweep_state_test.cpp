#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "core/report/progress.h"
#include "core/spec/op_call.h"
#include "core/store/database.h"
#include "core/store/sweep_state.h"
#include "test_databases.h"

using namespace opcost;
namespace fs = std::filesystem;

namespace {

// Every case runs on each engine: the queue must behave the same on a file and on a server.
class SweepStateTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override { OPCOST_SKIP_WITHOUT_ENGINE(GetParam()); }
};

SweepItem item(int n) {
  SweepItem it;
  it.call = "aten::relu self=f32[" + std::to_string(n) + "]";
  it.key = sweep_item_key(signature_hash("aten::relu", "", "self=f32[" + std::to_string(n) + "]"), "cpu", "warm", "",
                          "settings");
  it.axes = {{"n", n}};
  return it;
}

Measurement measurement_of(const SweepItem& it) {
  Measurement m;
  m.created_at = "2026-11-22T08:00:00Z";
  m.op = "aten::relu";
  m.args = it.call.substr(std::string("aten::relu ").size());
  m.args_hash = signature_hash(m.op, "", m.args);
  m.time.per_call_us.mean = 1;
  m.total_seconds = 0.5;
  return m;
}

TEST_P(SweepStateTest, ItemsAreClaimedInOrderAndDoneLandsWithItsMeasurement) {
  opcost::testing::TestDatabase t(GetParam());
  Database db(t.location());
  SweepState s(db);
  s.enroll({"grid", "scope-1"}, {item(1), item(2), item(3)}, SweepState::Reset::kNone);
  EXPECT_EQ(s.counts({"grid", "scope-1"}).pending, 3u);
  auto first = s.claim({"grid", "scope-1"}, "host:1");
  ASSERT_TRUE(first);
  EXPECT_EQ(first->call, "aten::relu self=f32[1]");
  EXPECT_EQ(first->axes["n"], 1);
  EXPECT_EQ(first->attempts, 1);
  auto second = s.claim({"grid", "scope-1"}, "host:1");
  ASSERT_TRUE(second);
  EXPECT_EQ(second->call, "aten::relu self=f32[2]");  // the first is running: never claimed twice
  const int64_t id = db.insert(measurement_of(item(1)), [&](int64_t row) { s.mark_done(first->key, "host:1", row); });
  s.mark_failed(second->key, "host:1", "out of memory");
  const auto c = s.counts({"grid", "scope-1"});
  EXPECT_EQ(c.done, 1u);
  EXPECT_EQ(c.failed, 1u);
  EXPECT_EQ(c.pending, 1u);
  const auto done = s.items({"grid", "scope-1"}, ItemStatus::kDone);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].measurement_id, id);
  EXPECT_DOUBLE_EQ(s.done_summary({"grid", "scope-1"}).mean_seconds, 0.5);
  EXPECT_EQ(s.done_summary({"grid", "scope-1"}).workers, 1u);
  EXPECT_EQ(s.items({"grid", "scope-1"}, ItemStatus::kFailed)[0].reason, "out of memory");
  // A late failure report never undoes a done item.
  s.mark_failed(first->key, "host:1", "the worker died");
  EXPECT_EQ(s.counts({"grid", "scope-1"}).done, 1u);
}

TEST_P(SweepStateTest, AMeasurementAndItsDoneMarkLandTogetherOrNotAtAll) {
  opcost::testing::TestDatabase t(GetParam());
  Database db(t.location());
  SweepState s(db);
  s.enroll({"grid", "scope-1"}, {item(1)}, SweepState::Reset::kNone);
  auto it = s.claim({"grid", "scope-1"}, "host:1");
  // The item's state and its measurement land together: a failure inside leaves neither.
  EXPECT_THROW(
      db.insert(measurement_of(item(1)), [&](int64_t) { throw DatabaseError(DatabaseError::Kind::kOther, "x"); }),
      DatabaseError);
  EXPECT_EQ(db.count(), 0u);
  EXPECT_EQ(s.counts({"grid", "scope-1"}).running, 1u);
}

TEST_P(SweepStateTest, ResetsAndSharedItemsAndAbandonedWorkers) {
  opcost::testing::TestDatabase t(GetParam());
  Database db(t.location());
  SweepState s(db);
  s.enroll({"a", "scope-1"}, {item(1), item(2)}, SweepState::Reset::kNone);
  auto one = s.claim({"a", "scope-1"}, "host:1");
  db.insert(measurement_of(item(1)), [&](int64_t row) { s.mark_done(one->key, "host:1", row); });
  auto two = s.claim({"a", "scope-1"}, "host:2");
  s.mark_failed(two->key, "host:2", "bad shape");
  // Another sweep with item 1: already done there, so nothing to claim for it.
  s.enroll({"b", "scope-1"}, {item(1), item(3)}, SweepState::Reset::kNone);
  EXPECT_EQ(s.counts({"b", "scope-1"}).done, 1u);
  EXPECT_EQ(s.claim({"b", "scope-1"}, "host:3")->call, "aten::relu self=f32[3]");
  EXPECT_EQ(s.sweeps(), (std::vector<std::string>{"a", "b"}));
  // Run again: failed stays failed, unless retried.
  s.enroll({"a", "scope-1"}, {item(1), item(2)}, SweepState::Reset::kNone);
  EXPECT_EQ(s.counts({"a", "scope-1"}).failed, 1u);
  s.enroll({"a", "scope-1"}, {item(1), item(2)}, SweepState::Reset::kFailed);
  EXPECT_EQ(s.counts({"a", "scope-1"}).pending, 1u);
  EXPECT_EQ(s.counts({"a", "scope-1"}).done, 1u);
  s.enroll({"a", "scope-1"}, {item(1), item(2)}, SweepState::Reset::kAll);
  EXPECT_EQ(s.counts({"a", "scope-1"}).pending, 2u);
  // Item 3 is running for host:3; a dead worker's item goes back to pending.
  EXPECT_EQ(s.requeue_abandoned([](const std::string& w) { return w != "host:3"; }), 1u);
  EXPECT_EQ(s.counts({"b", "scope-1"}).pending, 2u);
  EXPECT_EQ(s.requeue_abandoned([](const std::string&) { return false; }), 0u);
  // The stopped claim was no attempt of the item's: claimed again, it is on its first.
  const auto items = s.items({"b", "scope-1"}, ItemStatus::kPending);
  ASSERT_FALSE(items.empty());
  for (const auto& it : items) EXPECT_EQ(it.attempts, 0) << it.call;
}

TEST_P(SweepStateTest, ARunSeesOnlyTheItemsOfItsScope) {
  // The same grid at another target: its keys differ, and so does the run's scope. Neither run
  // claims or counts the other's items.
  opcost::testing::TestDatabase t(GetParam());
  Database db(t.location());
  SweepState s(db);
  auto at = [](int n, const std::string& settings) {
    SweepItem it = item(n);
    it.key = sweep_item_key(signature_hash("aten::relu", "", it.call), "cpu", "warm", "", settings);
    return it;
  };
  s.enroll({"g", "tight"}, {at(1, "tight"), at(2, "tight")}, SweepState::Reset::kNone);
  auto first = s.claim({"g", "tight"}, "host:1");
  db.insert(measurement_of(item(1)), [&](int64_t row) { s.mark_done(first->key, "host:1", row); });
  s.enroll({"g", "loose"}, {at(1, "loose")}, SweepState::Reset::kNone);
  EXPECT_EQ(s.counts({"g", "loose"}).pending, 1u);
  EXPECT_EQ(s.counts({"g", "loose"}).done, 0u);
  EXPECT_EQ(s.counts({"g", "tight"}).total(), 2u);
  EXPECT_EQ(s.claim({"g", "loose"}, "host:2")->key, at(1, "loose").key);
  EXPECT_FALSE(s.claim({"g", "loose"}, "host:2"));  // the tight run's item 2 is not this run's
  EXPECT_EQ(s.claim({"g", "tight"}, "host:3")->key, at(2, "tight").key);
  EXPECT_EQ(s.items({"g", "tight"}).size(), 2u);
}

TEST_P(SweepStateTest, ItemsTheSchemaRefusesAreFailedAtOnceWithTheirReason) {
  opcost::testing::TestDatabase t(GetParam());
  Database db(t.location());
  SweepState s(db);
  s.enroll({"a", "scope-1"}, {item(1)}, SweepState::Reset::kNone, {{item(9), "no argument named 'alpha'"}});
  const auto c = s.counts({"a", "scope-1"});
  EXPECT_EQ(c.pending, 1u);
  EXPECT_EQ(c.failed, 1u);
  EXPECT_EQ(s.items({"a", "scope-1"}, ItemStatus::kFailed)[0].reason, "no argument named 'alpha'");
}

INSTANTIATE_TEST_SUITE_P(Engines, SweepStateTest, ::testing::Values("sqlite", "postgres"));

TEST(Progress, PlainLinesAndTheBarSayDoneTotalRateAndWhatIsLeft) {
  EXPECT_EQ(progress_text("g", 0, 10, 0, false), "g: 0 of 10 items (0%)");
  EXPECT_EQ(progress_text("g", 5, 10, 10, false), "g: 5 of 10 items (50%), 0.50 items/s, 10s in, about 10s left");
  // Resumed: 4 were done before, 1 in this run's 10 s: 0.1 items/s, 50 s left.
  EXPECT_EQ(progress_text("g", 5, 10, 10, false, 4), "g: 5 of 10 items (50%), 0.10 items/s, 10s in, about 50s left");
  EXPECT_EQ(progress_text("g", 5, 10, 10, true), "g  50%|██████████          | 5/10 [00:10<00:10, 0.50 it/s]");
  EXPECT_EQ(progress_text("g", 0, 10, 3, true), "g   0%|                    | 0/10 [00:03<?, ? it/s]");
}

}  // namespace

namespace {

TEST_P(SweepStateTest, AnExpiredLeaseGoesBackAndAHeartbeatKeepsIt) {
  opcost::testing::TestDatabase t(GetParam());
  Database db(t.location());
  SweepState s(db);
  s.enroll({"a", "scope-1"}, {item(1), item(2)}, SweepState::Reset::kNone);
  const SweepState::Lease short_lease{0.05, 2};
  auto lost = s.claim({"a", "scope-1"}, "node-1:7", short_lease);    // a worker on a node that goes away
  auto kept = s.claim({"a", "scope-1"}, "node-2:8", short_lease);    // one that keeps renewing
  EXPECT_FALSE(s.claim({"a", "scope-1"}, "node-3:9", short_lease));  // both held
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  EXPECT_TRUE(s.heartbeat(kept->key, "node-2:8", 60));
  EXPECT_FALSE(s.heartbeat(kept->key, "node-3:9", 60));  // only its own worker renews it
  std::this_thread::sleep_for(std::chrono::milliseconds(40));
  // Both workers look alive to this host (other hosts): only the lease decides, and the next
  // claim takes the item whose lease ran out.
  EXPECT_EQ(s.requeue_abandoned([](const std::string&) { return true; }), 0u);
  auto again = s.claim({"a", "scope-1"}, "node-3:9", short_lease);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->key, lost->key);
  EXPECT_EQ(again->attempts, 2);
  EXPECT_EQ(s.counts({"a", "scope-1"}).running, 2u);
  // The worker that lost its item finishes late: its result is refused (rolled back with its
  // row), so the item is stored once, by its new worker.
  EXPECT_THROW(db.insert(measurement_of(item(1)), [&](int64_t row) { s.mark_done(lost->key, "node-1:7", row); }),
               LeaseLost);
  EXPECT_EQ(db.count(), 0u);
  db.insert(measurement_of(item(1)), [&](int64_t row) { s.mark_done(again->key, "node-3:9", row); });
  EXPECT_EQ(s.counts({"a", "scope-1"}).done, 1u);
  // Its late failure report changes nothing either.
  s.mark_failed(lost->key, "node-1:7", "late");
  EXPECT_EQ(s.counts({"a", "scope-1"}).done, 1u);
  // An item whose lease ran out on every try is failed, with why, instead of taken again.
  EXPECT_TRUE(s.heartbeat(kept->key, "node-2:8", 0.05));  // node-2's last renewal
  std::this_thread::sleep_for(std::chrono::milliseconds(60));
  auto retry = s.claim({"a", "scope-1"}, "node-4:1", short_lease);
  ASSERT_TRUE(retry);
  EXPECT_EQ(retry->key, kept->key);
  std::this_thread::sleep_for(std::chrono::milliseconds(60));
  EXPECT_FALSE(s.claim({"a", "scope-1"}, "node-5:1", short_lease));
  const auto failed = s.items({"a", "scope-1"}, ItemStatus::kFailed);
  ASSERT_EQ(failed.size(), 1u);
  EXPECT_NE(failed[0].reason.find("stopped renewing the lease 2 times"), std::string::npos) << failed[0].reason;
}

TEST_P(SweepStateTest, AWorkerThatDiesInAnItemGetsItRetriedThenFailed) {
  opcost::testing::TestDatabase t(GetParam());
  Database db(t.location());
  SweepState s(db);
  s.enroll({"a", "scope-1"}, {item(1)}, SweepState::Reset::kNone);
  auto first = s.claim({"a", "scope-1"}, "host:1");
  EXPECT_FALSE(s.worker_died(first->key, "killed by signal 9", 2));  // attempt 1 of 2: back
  EXPECT_EQ(s.counts({"a", "scope-1"}).pending, 1u);
  auto second = s.claim({"a", "scope-1"}, "host:2");
  EXPECT_EQ(second->attempts, 2);
  EXPECT_TRUE(s.worker_died(second->key, "killed by signal 11", 2));  // again: isolated
  const auto failed = s.items({"a", "scope-1"}, ItemStatus::kFailed);
  ASSERT_EQ(failed.size(), 1u);
  EXPECT_EQ(failed[0].reason, "killed by signal 11");
  EXPECT_FALSE(s.claim({"a", "scope-1"}, "host:3"));
}

TEST_P(SweepStateTest, AWorkerThatDiesHoldingSeveralItemsFailsNoneOfThemWhateverTheirAttempts) {
  opcost::testing::TestDatabase t(GetParam());
  Database db(t.location());
  SweepState s(db);
  s.enroll({"a", "scope-1"}, {item(1), item(2)}, SweepState::Reset::kNone);
  const auto one = s.claim({"a", "scope-1"}, "host:1");
  const auto two = s.claim({"a", "scope-1"}, "host:1");
  ASSERT_TRUE(one && two);
  // At max_attempts 1 a death alone fails the item; in a group it is no item's for sure.
  EXPECT_FALSE(s.worker_died(one->key, "killed by signal 9", 1, /*alone=*/false));
  EXPECT_FALSE(s.worker_died(two->key, "killed by signal 9", 1, /*alone=*/false));
  EXPECT_EQ(s.counts({"a", "scope-1"}).pending, 2u);
  const auto again = s.claim({"a", "scope-1"}, "host:2");
  ASSERT_TRUE(again);
  EXPECT_EQ(again->attempts, 2);                                     // claimed again: the worker measures it alone
  EXPECT_TRUE(s.worker_died(again->key, "killed by signal 11", 1));  // alone: its own
  EXPECT_EQ(s.items({"a", "scope-1"}, ItemStatus::kFailed).size(), 1u);
}

TEST_P(SweepStateTest, TheItemsAWorkerHoldsAreFoundByItsNameInItsSweepOnly) {
  opcost::testing::TestDatabase t(GetParam());
  Database db(t.location());
  SweepState s(db);
  s.enroll({"a", "scope-1"}, {item(1), item(2), item(3)}, SweepState::Reset::kNone);
  EXPECT_TRUE(s.held_by({"a", "scope-1"}, "host:1").empty());  // nothing claimed yet
  const auto taken = s.claim({"a", "scope-1"}, "host:1");
  const auto also = s.claim({"a", "scope-1"}, "host:1");
  s.claim({"a", "scope-1"}, "host:2");
  const auto held = s.held_by({"a", "scope-1"}, "host:1");
  ASSERT_EQ(held.size(), 2u);
  EXPECT_EQ(held[0].key, taken->key);
  EXPECT_EQ(held[0].call, taken->call);
  EXPECT_EQ(held[1].key, also->key);
  EXPECT_EQ(s.held_by({"a", "scope-1"}, "host:2").size(), 1u);  // another worker's
  EXPECT_TRUE(s.held_by({"a", "scope-2"}, "host:1").empty());   // another scope
  s.mark_failed(taken->key, "host:1", "refused");
  s.mark_failed(also->key, "host:1", "refused");
  EXPECT_TRUE(s.held_by({"a", "scope-1"}, "host:1").empty());  // no longer running
}

}  // namespace
