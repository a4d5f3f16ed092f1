// The process-wide tune cache.
#include "latke/core/tune.h"

#include <cstdlib>
#include <map>
#include <mutex>
#include <sstream>
#include <utility>

namespace latke {

namespace {
std::mutex tune_mutex;
std::map<std::string, std::pair<int, double>>& cache() {
  static std::map<std::string, std::pair<int, double>> c;
  return c;
}
}  // namespace

int tuned_block_size(const std::string& key) {
  std::lock_guard<std::mutex> lock(tune_mutex);
  auto it = cache().find(key);
  return it == cache().end() ? 0 : it->second.first;
}

void store_block_size(const std::string& key, int block, double ms) {
  std::lock_guard<std::mutex> lock(tune_mutex);
  cache()[key] = {block, ms};
}

bool tuning_enabled() {
  static const bool on = [] {
    const char* v = std::getenv("LATKE_TUNE");
    return !(v && std::string(v) == "0");
  }();
  return on;
}

std::string tune_report() {
  std::lock_guard<std::mutex> lock(tune_mutex);
  std::ostringstream s;
  for (const auto& [k, v] : cache()) s << k << " block=" << v.first << " ms=" << v.second << "\n";
  return s.str();
}

}  // namespace latke
