// The `tessera` command line (placeholder until the compile driver lands).
#include <cstdio>
int main() {
  std::puts("tessera: usage: tessera compile FILE --kernel NAME ...");
  return 0;
}
