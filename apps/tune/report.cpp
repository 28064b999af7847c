#include "report.hpp"

#include <fmt/format.h>

#include <cmath>
#include <map>

#include "options.hpp"

namespace tune {
namespace {

// The model is judged where bandwidth matters, against its target of
// |predicted / measured - 1| <= kTarget (docs/SCALING.md).
constexpr std::size_t kJudgedFrom = 64 * 1024;
constexpr double kTarget = 0.25;

std::optional<double> predicted_us(const std::optional<model::Machine>& machine, const std::string& plan,
                                   std::size_t bytes, const model::Shape& shape) {
  if (!machine) return std::nullopt;
  const auto t = model::predict_all_reduce(*machine, plan, double(bytes), shape);
  return t ? std::optional<double>(*t * 1e6) : std::nullopt;
}

}  // namespace

std::string sweep_table(const SweepResult& r, const std::vector<std::string>& plans,
                        const std::optional<model::Machine>& machine, const model::Shape& shape, int ranks) {
  const double bus = ranks > 1 ? 2.0 * (ranks - 1) / ranks : 1.0;
  std::string t = fmt::format("# {:>10} {:>16} {:>6} {:>12} {:>9}", "size", "plan", "iters", "time us", "busbw");
  if (machine) t += fmt::format(" {:>12} {:>8}", "model us", "error");
  t += "\n";
  std::map<std::string, double> worst;  // plan -> largest |error| from kJudgedFrom
  int judged = 0, within = 0;           // (plan, size) pairs from kJudgedFrom, and those within kTarget
  for (std::size_t k = 0; k < r.sizes.size(); ++k)
    for (std::size_t p = 0; p < plans.size(); ++p) {
      const double us = r.sizes[k].times_us[p];
      if (us < 0) continue;
      const std::size_t bytes = r.sizes[k].bytes;
      t += fmt::format("  {:>10} {:>16} {:>6} {:>12.2f} {:>9.3f}", human_bytes(double(bytes)), plans[p],
                       r.iterations[k][p], us, double(bytes) / us / 1e3 * bus);
      if (const auto model = predicted_us(machine, plans[p], bytes, shape)) {
        const double error = *model / us - 1;
        t += fmt::format(" {:>12.2f} {:>+7.0f}%", *model, 100 * error);
        if (bytes >= kJudgedFrom) {
          worst[plans[p]] = std::max(worst[plans[p]], std::fabs(error));
          ++judged;
          within += std::fabs(error) <= kTarget ? 1 : 0;
        }
      }
      t += "\n";
    }
  if (!worst.empty()) {
    t += fmt::format("# model: largest |predicted / measured - 1| from {} up, per plan:",
                     human_bytes(double(kJudgedFrom)));
    for (const auto& p : plans)
      if (worst.count(p)) t += fmt::format(" {} {:.1f}%{}", p, 100 * worst[p], worst[p] > kTarget ? " (>25%)" : "");
    t += fmt::format("\n# model: {} of {} (plan, size) pairs from {} within 25%\n", within, judged,
                     human_bytes(double(kJudgedFrom)));
  }
  return t;
}

std::string sweep_csv(const SweepResult& r, const std::vector<std::string>& plans,
                      const std::optional<model::Machine>& machine, const model::Shape& shape) {
  std::string csv = "bytes,plan,iters,time_us,model_us\n";
  for (std::size_t k = 0; k < r.sizes.size(); ++k)
    for (std::size_t p = 0; p < plans.size(); ++p) {
      if (r.sizes[k].times_us[p] < 0) continue;
      const auto model = predicted_us(machine, plans[p], r.sizes[k].bytes, shape);
      csv += fmt::format("{},{},{},{:.4f},{}\n", r.sizes[k].bytes, plans[p], r.iterations[k][p], r.sizes[k].times_us[p],
                         model ? fmt::format("{:.4f}", *model) : "");
    }
  return csv;
}

}  // namespace tune
