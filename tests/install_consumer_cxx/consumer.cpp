// The smallest C++ program on the installed Latke: initialize, print the version and backend.
#include <latke/latke.h>

#include <cstdio>

int main(int argc, char** argv) {
  if (PetscInitialize(&argc, &argv, nullptr, nullptr) || LatkeInitialize()) return 1;
  int major = 0, minor = 0, patch = 0;
  const char* backend = nullptr;
  if (LatkeGetVersion(&major, &minor, &patch) || LatkeGetBackend(&backend)) return 1;
  std::printf("Latke %d.%d.%d on %s\n", major, minor, patch, backend);
  LatkeFinalize();
  return PetscFinalize() != 0;
}
