// The entry point of the per-module link checks (CMakeLists.txt): linking succeeds only when
// every object of the module resolves against the modules it declares.
int main() {
  return 0;
}
