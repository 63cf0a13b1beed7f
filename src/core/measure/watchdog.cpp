#include "core/measure/watchdog.h"

#include <fmt/format.h>

#include "core/energy/monitor.h"  // now_s
#include "core/sys/interrupt.h"

namespace opcost {

Watchdog::Watchdog(std::string what, Options o, ProgressFn progress, std::function<double()> now)
    : what_(std::move(what)),
      o_(o),
      progress_(std::move(progress)),
      now_(now ? std::move(now) : [] { return now_s(); }) {
  start_ = now_();
}

double Watchdog::elapsed_s() const { return now_() - start_; }

void Watchdog::check(const char* phase, std::size_t count, const char* unit) {
  stop_if_interrupted();  // Ctrl-C from Python: the measurement in progress is dropped
  const double t = elapsed_s();
  const bool report_due =
      progress_ && t >= o_.progress_after_s && (last_report_ < 0 || t - last_report_ >= o_.progress_every_s);
  if (t <= limit_s() && !report_due) return;
  const std::string detail = unit ? fmt::format("{} {}", count, unit) : "";
  if (t > limit_s())
    throw MeasurementAbandoned(
        fmt::format("{}: abandoned while {} after {:.0f} s, {:.0f}× its budget of {:.1f} s{}; give it more time "
                    "(--max-time), use smaller shapes, or leave it out",
                    what_, phase, t, o_.abandon_factor, o_.budget_s, detail.empty() ? "" : " (" + detail + ")"));
  last_report_ = t;
  progress_(fmt::format("{}: {}{}, {:.0f} s (budget {:.1f} s)", what_, phase, detail.empty() ? "" : ", " + detail, t,
                        o_.budget_s));
}

}  // namespace opcost
