// A module built with -g and not stripped (genrule //stacktrace:lined_module; Bazel's own links
// strip debug sections): symbolize_test finds file:line in it. Plain C linkage, no library use.
extern "C" {

// The line of the call in xtimer_lined_call (symbolize_test expects it).
extern const int xtimer_lined_call_line = __LINE__ + 4;

// Calls `f`, which returns its own return address: a pc in this function at the line above.
__attribute__((noinline)) unsigned long xtimer_lined_call(unsigned long (*f)()) {
  unsigned long pc = f();
  asm volatile("" ::: "memory");
  return pc;
}

}  // extern "C"
