// The process-wide tune cache, and its file in LATKE_RESOURCE_PATH.
#include "src/core/tune.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <utility>

#include "src/core/backend.h"
#include "src/core/error.h"

namespace latke {

namespace {
std::mutex tune_mutex;
struct Cache {
  std::map<std::string, std::pair<int, double>> entries;
  bool loaded = false;  ///< the file was looked for
  bool dirty = false;   ///< entries the file lacks
};
Cache& cache() {
  static Cache c;
  return c;
}

constexpr const char* magic = "latke-tunecache 1";

std::string cache_path() {
  const char* dir = std::getenv("LATKE_RESOURCE_PATH");
  if (!dir || !*dir) return {};
  return std::string(dir) + "/latke_tunecache.tsv";
}

/// Reads a cache file into c (with the lock held); the entries it held, 0 when it is missing
/// or made for another device (then it is ignored, and replaced at the next save).
int read_locked(Cache& c, const std::string& path) {
  std::ifstream in(path);
  std::string header;
  if (!in || !std::getline(in, header) || header != std::string(magic) + "\t" + tune_cache_device()) return 0;
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    const auto t1 = line.find('\t'), t2 = line.rfind('\t');
    if (t1 == std::string::npos || t1 == t2) continue;
    const int block = std::atoi(line.substr(t1 + 1, t2 - t1 - 1).c_str());
    const double ms = std::atof(line.substr(t2 + 1).c_str());
    if (block <= 0 || ms < 0) continue;
    c.entries.emplace(line.substr(0, t1), std::make_pair(block, ms));  // this run's own choices stay
    ++n;
  }
  return n;
}

void write_locked(Cache& c, const std::string& path) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp);
    require(out.good(), "tune cache: cannot write ", tmp, " (LATKE_RESOURCE_PATH must be a writable directory)");
    out << magic << "\t" << tune_cache_device() << "\n";
    for (const auto& [k, v] : c.entries)
      if (v.second >= 0) out << k << "\t" << v.first << "\t" << v.second << "\n";  // timed choices only
    require(out.good(), "tune cache: writing ", tmp, " failed");
  }
  require(std::rename(tmp.c_str(), path.c_str()) == 0, "tune cache: cannot rename ", tmp, " to ", path);
}

/// Reads LATKE_RESOURCE_PATH's file once (with the lock held).
void load_locked(Cache& c) {
  if (c.loaded) return;
  c.loaded = true;
  const std::string path = cache_path();
  if (!path.empty()) read_locked(c, path);
}
}  // namespace

int tuned_block_size(const std::string& key) {
  std::lock_guard<std::mutex> lock(tune_mutex);
  Cache& c = cache();
  load_locked(c);
  auto it = c.entries.find(key);
  return it == c.entries.end() || it->second.second < 0 ? 0 : it->second.first;  // ms < 0: not timed
}

void store_block_size(const std::string& key, int block, double ms) {  // ms < 0: not timed
  std::lock_guard<std::mutex> lock(tune_mutex);
  Cache& c = cache();
  c.entries[key] = {block, ms};
  c.dirty = c.dirty || ms >= 0;
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
  for (const auto& [k, v] : cache().entries) s << k << " block=" << v.first << " ms=" << v.second << "\n";
  return s.str();
}

std::string tune_cache_device() {
  const DeviceInfo d = device_info();
  return d.name + "|" + std::to_string(d.sm_count);
}

int read_tune_cache(const std::string& path) {
  std::lock_guard<std::mutex> lock(tune_mutex);
  return read_locked(cache(), path);
}

void write_tune_cache(const std::string& path) {
  std::lock_guard<std::mutex> lock(tune_mutex);
  write_locked(cache(), path);
}

void save_tune_cache() {
  std::lock_guard<std::mutex> lock(tune_mutex);
  Cache& c = cache();
  const std::string path = cache_path();
  if (path.empty() || !c.dirty) return;
  write_locked(c, path);
  c.dirty = false;
}

}  // namespace latke
