// Python embedded the way a non-Python host loads it: libpython dlopen'ed RTLD_LOCAL, so no
// CPython symbol is in the global scope (//hook:stack_capture_test checks that the hook still
// finds the interpreter). Usage: embed_python LIBPYTHON_SO SCRIPT.py; runs SCRIPT as __main__.
#include <dlfcn.h>

#include <cstdio>
#include <string>

int main(int argc, char** argv) {
  auto enabled = reinterpret_cast<int (*)()>(dlsym(RTLD_DEFAULT, "xtimer_enabled"));
  if (argc != 3 || enabled == nullptr || enabled() != 1) {
    fprintf(stderr, "usage: embed_python LIBPYTHON_SO SCRIPT.py (with libxtimer.so preloaded)\n");
    return 2;
  }
  void* python = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (python == nullptr) {
    fprintf(stderr, "embed_python: %s\n", dlerror());
    return 2;
  }
  auto initialize = reinterpret_cast<void (*)()>(dlsym(python, "Py_Initialize"));
  auto run = reinterpret_cast<int (*)(const char*)>(dlsym(python, "PyRun_SimpleString"));
  if (initialize == nullptr || run == nullptr) return 2;
  initialize();
  const std::string code = "import runpy\nrunpy.run_path('" + std::string(argv[2]) +
                           "', run_name='__main__')\n";
  return run(code.c_str()) == 0 ? 0 : 1;
}
