#include <tessera/tessera.h>
#include <iostream>
int main() {
  const char* src = "import tessera\nimport tessera.language as tl\n@tessera.jit\ndef k(x, n, B: tl.constexpr):\n"
                    "    o = tl.arange(0, B)\n    tl.store(x + o, tl.load(x + o, mask=o < n) * 2, mask=o < n)\n";
  std::string ptx = tessera::compileToPtx(src, "k", "*fp32,i32", {{"B", tessera::ConstexprValue::ofInt(128)}}, "sm_90a");
  std::cout << (ptx.find(".entry") != std::string::npos ? "ok" : "no entry") << "\n";
  return ptx.empty();
}
