// The Python tracer's source (docs/hook.md "Python tracing"), run once by the pending call of
// python_trace.cc in a namespace of its own: it leaves no name in __main__ and imports nothing
// but the built-in gc module. Every callback it installs catches its own errors: the tracer
// never raises into the application.
#include "hook/python_trace.h"

namespace xtimer {
namespace hook {
namespace {

const char kSource[] = R"PY(
import sys

_KINDS = {"call": 1, "data": 3, "step": 4}
_Function = type(lambda: None)
_MAX_CODES = 512  # pyspans::kMaxTracedCodes
_warned = set()


def _warn_once(text):
    if text not in _warned:
        _warned.add(text)
        _warn(text)


def _match(pattern, text):
    """Whether `text` matches `pattern`: '*' any run of characters, '?' one character."""
    p = t = 0
    star, mark = -1, 0
    while t < len(text):
        if p < len(pattern) and pattern[p] in ("?", text[t]):
            p, t = p + 1, t + 1
        elif p < len(pattern) and pattern[p] == "*":
            star, mark, p = p, t, p + 1
        elif star >= 0:
            mark += 1
            p, t = star + 1, mark
        else:
            return False
    while p < len(pattern) and pattern[p] == "*":
        p += 1
    return p == len(pattern)


def _wild(text):
    return "*" in text or "?" in text


def _parse(text, out):
    """XTIMER_PY_TRACE: module:qualname[@kind] items separated by commas; "default"."""
    for item in text.split(","):
        item = item.strip()
        if not item:
            continue
        if item == "default":
            _parse(_defaults, out)
            continue
        kind = 1
        if "@" in item:
            item, _, name = item.rpartition("@")
            if name not in _KINDS:
                _warn("XTIMER_PY_TRACE: unknown kind @%s (call, data, step)" % name)
                continue
            kind = _KINDS[name]
        module, _, qual = item.partition(":")
        if not module or not qual:
            _warn("XTIMER_PY_TRACE: %r is not module:qualname" % item)
            continue
        out.append((module, qual, kind))
    return out


def _family(cls):
    """A class and its subclasses, all generations."""
    out, todo, seen = [], [cls], set()
    while todo and len(out) < 10000:
        c = todo.pop()
        if id(c) in seen:
            continue
        seen.add(id(c))
        out.append(c)
        try:
            todo.extend(type.__subclasses__(c))
        except TypeError:
            pass
    return out


def _walk(obj, parts, module, found):
    """The values the dotted `parts` name under `obj`, read from __dict__ (no attribute hooks,
    no lazy imports); a class on the way stands for its subclasses too (their overrides)."""
    d = getattr(obj, "__dict__", None) if isinstance(obj, type) else vars(obj)
    if d is None:
        return
    part = parts[0]
    if _wild(part):
        items = [v for k, v in list(d.items()) if isinstance(k, str) and _match(part, k)]
        if module is not None:  # a module's wildcard: what it defines, not what it imports
            items = [v for v in items if getattr(v, "__module__", None) == module]
    else:
        v = d.get(part)
        items = [] if v is None else [v]
    for v in items:
        if len(parts) == 1:
            found.append(v)
        elif isinstance(v, type):
            for c in _family(v):
                _walk(c, parts[1:], None, found)


def _code_of(value):
    if isinstance(value, (staticmethod, classmethod)):
        value = value.__func__
    return value.__code__ if isinstance(value, _Function) else None


class _Tracer:
    def __init__(self, specs, trace_code, on_scan):
        self.specs = specs
        self.trace_code = trace_code  # None: functions are not traced
        self.on_scan = on_scan
        self.codes = {}  # id -> code object, kept alive while traced
        self.modules_seen = -1
        self.ticks = 0

    def add(self, value, name, kind):
        code = _code_of(value)
        if code is None or id(code) in self.codes:
            return
        if len(self.codes) >= _MAX_CODES:
            _warn_once("more than %d traced functions: %s and later ones are not" %
                       (_MAX_CODES, name))
            return
        if _register(code, name, kind):
            self.codes[id(code)] = code
            self.trace_code(code)

    def scan(self):
        mods = sys.modules
        self.modules_seen = len(mods)
        if self.on_scan is not None:
            self.on_scan()
        if self.trace_code is None:
            return
        for module, qual, kind in self.specs:
            names = [n for n in list(mods) if _match(module, n)] if _wild(module) else [module]
            for name in names:
                mod = mods.get(name)
                if mod is None:
                    continue
                found = []
                _walk(mod, qual.split("."), name, found)
                for value in found:
                    if _wild(module) or _wild(qual):
                        label = "%s:%s" % (getattr(value, "__module__", name),
                                           getattr(value, "__qualname__", qual))
                    else:
                        label = "%s:%s" % (module, qual)
                    self.add(value, label, kind)

    def poke(self):
        """New modules (an import began, so the previous ones are done), or every 64th
        collection (classes defined since): resolve the specs again."""
        self.ticks += 1
        if len(sys.modules) != self.modules_seen or self.ticks >= 64:
            self.ticks = 0
            try:
                self.scan()
            except Exception as e:
                _warn_once("resolving XTIMER_PY_TRACE failed: %r" % (e,))


def _monitoring():
    """3.12+: a sys.monitoring tool of our own; local events on the traced code objects only,
    PY_UNWIND (never a local event) for everyone."""
    mon = sys.monitoring
    for tool in (4, 3):
        if mon.get_tool(tool) is None:
            mon.use_tool_id(tool, "xtimer")
            break
    else:
        _warn("sys.monitoring tool ids 4 and 3 are taken: Python functions are not traced")
        return None
    E = mon.events
    for event, fn in ((E.PY_START, _start), (E.PY_RESUME, _start), (E.PY_RETURN, _stop),
                      (E.PY_YIELD, _stop), (E.PY_UNWIND, _stop)):
        mon.register_callback(tool, event, fn)
    mon.set_events(tool, E.PY_UNWIND)
    local = E.PY_START | E.PY_RESUME | E.PY_RETURN | E.PY_YIELD
    return lambda code: mon.set_local_events(tool, code, local)


def _profiling():
    """3.8-3.11, only when XTIMER_PY_TRACE was set (a profile function slows every call of its
    thread) and from the first traced function on: our C profile function on the main thread,
    chaining its Python profiler; threads started later through threading install it as their
    first profile event."""
    import _thread
    main = _thread.get_ident()
    active = []

    def install_main():
        prev = sys.getprofile()
        if prev is None or callable(prev):
            _set_profile(prev)
        else:
            _warn("the main thread runs a C profiler (cProfile?): its calls are not traced")

    def hook_threads():
        th = sys.modules.get("threading")
        if th is None or not active or len(active) > 1:
            return
        active.append(th)
        before = getattr(th, "_profile_hook", None)

        def xtimer_thread_start(frame, event, arg):
            _set_profile(before)
            if before is not None:
                return before(frame, event, arg)

        th.setprofile(xtimer_thread_start)

    def trace_code(code):
        if active:
            return
        active.append(True)
        if _thread.get_ident() == main:
            install_main()
        else:
            _on_main(install_main)
        hook_threads()

    return trace_code, hook_threads


def _install():
    specs = _parse(_specs, [])
    if hasattr(sys, "monitoring"):
        tracer = _Tracer(specs, _monitoring(), None)
    else:
        tracer = _Tracer(specs, *_profiling()) if _explicit else _Tracer(specs, None, None)
    tracer.poke()

    def audit(event, args):
        if event == "import":
            tracer.poke()

    sys.addaudithook(audit)
    import gc

    def xtimer_gc(phase, info):
        try:
            if phase == "start":
                tracer.poke()
                _gc(1, info.get("generation", 0))
            else:
                _gc(0, 0)
        except Exception:
            pass

    gc.callbacks.append(xtimer_gc)  # the last step: a test waits for it


try:
    _install()
except Exception as e:
    _warn("not installed: %r" % (e,))
)PY";

}  // namespace

const char* PythonTraceSource() { return kSource; }

}  // namespace hook
}  // namespace xtimer
