// ThreadSanitizer suppressions for binaries that link Debian's gRPC and Abseil (xtimerd, xtimer),
// which are not built with -fsanitize=thread: TSan cannot see their internal synchronisation (absl::Mutex's
// deadlock graph, gRPC's lock-free queues) and reports races inside them, and in gRPC's C++ API
// inlined into our code (grpc::...) that is synchronised by the uninstrumented core. Our own code
// is still checked: the control handler and dump manager also run on the HTTP threads and in
// direct calls, with no gRPC frame on the stack. gRPC's own internal threads (its executor, started
// by the first channel) are not joined when a short-lived client exits, which TSan reports as a
// thread leak at random (seen once in `xtimer analyze --hosts`): those leaks are gRPC's, not ours.
#if defined(__SANITIZE_THREAD__)
extern "C" const char* __tsan_default_suppressions() {
  return "race:libabsl_\n"
         "race:libgrpc\n"
         "race:libgpr\n"
         "race:libupb\n"
         "race:libaddress_sorting\n"
         "race:grpc::\n"
         "deadlock:libabsl_\n"
         "deadlock:libgrpc\n"
         "thread:libgpr\n"
         "thread:libgrpc\n";
}
#endif
