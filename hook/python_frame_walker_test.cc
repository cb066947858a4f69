// The frame walker on CPython objects laid out by hand in this process's memory (the 3.12 layout
// of hook/python_layout.cc): thread lists, the chain of frames across a shim frame, frames whose
// code is not a code object, strings of every kind, cuts; and the three line table formats.
#include "hook/python_frame_walker.h"

#include <cstring>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "hook/python_layout.h"

namespace xtimer {
namespace hook {
namespace {

// A zeroed, 8-byte aligned block standing for one CPython object.
class Obj {
 public:
  explicit Obj(size_t bytes = 256) : words_((bytes + 7) / 8, 0) {}
  uint64_t addr() const { return reinterpret_cast<uint64_t>(words_.data()); }
  void Set64(uint64_t off, uint64_t v) { memcpy(Byte(off), &v, 8); }
  void Set32(uint64_t off, uint32_t v) { memcpy(Byte(off), &v, 4); }
  void Set8(uint64_t off, uint8_t v) { *Byte(off) = static_cast<char>(v); }
  void Put(uint64_t off, const void* data, size_t n) { memcpy(Byte(off), data, n); }

 private:
  char* Byte(uint64_t off) { return reinterpret_cast<char*>(words_.data()) + off; }
  std::vector<uint64_t> words_;
};

// A compact str of `kind` bytes per character (ASCII when `ascii`).
Obj Str(const PythonLayout& l, const std::vector<uint32_t>& chars, int kind, bool ascii) {
  Obj s(l.unicode_compact_data + chars.size() * 4 + 8);
  s.Set64(l.unicode_length, chars.size());
  s.Set32(l.unicode_state, (kind << 2) | (1 << 5) | (ascii ? 1 << 6 : 0));
  const uint64_t data = ascii ? l.unicode_ascii_data : l.unicode_compact_data;
  for (size_t i = 0; i < chars.size(); ++i) s.Put(data + i * kind, &chars[i], kind);
  return s;
}

std::vector<uint32_t> Chars(const std::string& text) { return {text.begin(), text.end()}; }

Obj Bytes(const PythonLayout& l, const std::string& data) {
  Obj b(l.bytes_data + data.size() + 8);
  b.Set64(l.bytes_size, data.size());
  b.Put(l.bytes_data, data.data(), data.size());
  return b;
}

// CPython 3.11+ location entries (Objects/locations.md): "no columns" +2 (1 unit), "one line 0"
// (2 units), "one line 1" (1 unit), "no location" (1 unit), "long" -3.
const std::string kLocations("\xe8\x04" "\xd1\x00\x00" "\xd8\x00\x00" "\xf8" "\xf0\x07\x00\x00\x00",
                             14);

struct FakeProcess {
  PythonLayout l;
  Obj code_type, other_type, runtime, interp, t1, t2, cframe, inner, shim, outer, bogus;
  Obj code_a, code_b, not_code, table;
  Obj name_a, name_b, file;
  PythonRuntime rt;

  FakeProcess() {
    EXPECT_TRUE(PythonLayoutOf(12, &l));
    name_a = Str(l, Chars("inner"), 1, true);
    name_b = Str(l, {0xe9, 0x20ac, 0x1f600}, 4, false);  // e-acute, euro sign, emoji
    file = Str(l, {'/', 'j', 0xe9, '.', 'p', 'y'}, 1, false);  // Latin-1, not ASCII
    table = Bytes(l, kLocations);
    for (Obj* c : {&code_a, &code_b}) {
      c->Set64(l.object_type, code_type.addr());
      c->Set64(l.code_filename, file.addr());
      c->Set64(l.code_linetable, table.addr());
    }
    code_a.Set64(l.code_name, name_a.addr());
    code_a.Set32(l.code_firstlineno, 10);
    code_b.Set64(l.code_name, name_b.addr());
    code_b.Set32(l.code_firstlineno, 20);
    not_code.Set64(l.object_type, other_type.addr());
    runtime.Set64(l.interpreters_head, interp.addr());
    interp.Set64(l.interp_threads_head, t1.addr());
    t1.Set64(l.tstate_next, t2.addr());
    t1.Set64(l.tstate_thread_id, 111);
    t1.Set64(l.tstate_frame, cframe.addr());
    t2.Set64(l.tstate_thread_id, 222);  // no frame
    cframe.Set64(l.cframe_current_frame, inner.addr());
    inner.Set64(l.frame_code, code_a.addr());
    inner.Set64(l.frame_instr, code_a.addr() + l.code_instructions + 6);  // line 13
    inner.Set64(l.frame_previous, shim.addr());
    shim.Set8(l.frame_owner, 3);  // owned by the C stack: an entry frame
    shim.Set64(l.frame_code, code_a.addr());
    shim.Set64(l.frame_previous, outer.addr());
    outer.Set64(l.frame_code, code_b.addr());
    outer.Set64(l.frame_instr, code_b.addr() + l.code_instructions + 2);  // line 22
    outer.Set64(l.frame_previous, bogus.addr());
    bogus.Set64(l.frame_code, not_code.addr());
    bogus.Set64(l.frame_previous, 8);  // unmapped: the walk ends there, without a fault
    rt.layout = l;
    rt.runtime = runtime.addr();
    rt.code_type = code_type.addr();
  }
};

TEST(PythonFrameWalkerTest, ThreadStatesAndTheirIds) {
  FakeProcess p;
  uint64_t tstates[4] = {};
  ASSERT_EQ(PythonThreadStates(p.rt, tstates, 4), 2);
  EXPECT_EQ(tstates[0], p.t1.addr());
  EXPECT_EQ(tstates[1], p.t2.addr());
  EXPECT_EQ(PythonThreadStates(p.rt, tstates, 1), 1) << "at most max";
  EXPECT_EQ(PythonThreadIdOf(p.rt, p.t2.addr()), 222u);
  EXPECT_EQ(PythonNativeTidOf(p.rt, p.t2.addr()), 0) << "3.12 records no tid for us";
  EXPECT_EQ(PythonThreadStateOf(p.rt, 222), p.t2.addr());
  EXPECT_EQ(PythonThreadStateOf(p.rt, 333), 0u);
  PythonRuntime unreadable = p.rt;
  unreadable.runtime = 8;
  EXPECT_EQ(PythonThreadStates(unreadable, tstates, 4), -1);
  EXPECT_EQ(PythonThreadStateOf(unreadable, 111), 0u);
}

TEST(PythonFrameWalkerTest, EveryFrameOfTheChainAcrossTheEntryFrame) {
  FakeProcess p;
  RawPythonFrame f[8];
  ASSERT_EQ(ReadPythonFrames(p.rt, p.t1.addr(), f, 8), 2) << "the shim and the non-code frame "
                                                             "left out";
  EXPECT_STREQ(f[0].function, "inner");
  EXPECT_STREQ(f[0].file, "/j\xc3\xa9.py");
  EXPECT_EQ(f[0].line, 13);
  EXPECT_STREQ(f[1].function, "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80");
  EXPECT_EQ(f[1].line, 22);
  EXPECT_EQ(ReadPythonFrames(p.rt, p.t1.addr(), f, 1), 1) << "at most max";
  EXPECT_EQ(ReadPythonFrames(p.rt, p.t2.addr(), f, 8), 0) << "a thread without frames";
  p.rt.code_type = p.other_type.addr();  // a wrong layout reads no frame, not garbage
  EXPECT_EQ(ReadPythonFrames(p.rt, p.t1.addr(), f, 8), 1);
  EXPECT_STREQ(f[0].function, "");
}

TEST(PythonFrameWalkerTest, LongNamesAreCutAtACharacterBoundary) {
  FakeProcess p;
  Obj long_name = Str(p.l, std::vector<uint32_t>(400, 0x20ac), 2, false);  // 3 bytes each
  p.code_a.Set64(p.l.code_name, long_name.addr());
  RawPythonFrame f[1];
  ASSERT_EQ(ReadPythonFrames(p.rt, p.t1.addr(), f, 1), 1);
  EXPECT_EQ(strlen(f[0].function), 255u - 255u % 3);
  EXPECT_EQ(std::string(f[0].function, 3), "\xe2\x82\xac");
}

int Line(PythonLineTable kind, const std::string& table, int first, int addrq) {
  return PythonLineOf(kind, reinterpret_cast<uint64_t>(table.data()), table.size(), first, addrq);
}

TEST(PythonLineTest, LocationTable) {
  const auto k = PythonLineTable::kLocations;
  EXPECT_EQ(Line(k, kLocations, 10, 0), 12);
  EXPECT_EQ(Line(k, kLocations, 10, 2), 12);
  EXPECT_EQ(Line(k, kLocations, 10, 4), 12);
  EXPECT_EQ(Line(k, kLocations, 10, 6), 13);
  EXPECT_EQ(Line(k, kLocations, 10, 8), 0);
  EXPECT_EQ(Line(k, kLocations, 10, 10), 10);
  EXPECT_EQ(Line(k, kLocations, 10, 12), 0) << "past the table";
  EXPECT_EQ(Line(k, kLocations, 10, -2), 10) << "before the first instruction";
  EXPECT_EQ(Line(k, "", 10, 0), 0);
}

TEST(PythonLineTest, Lnotab38) {
  // (address increment, signed line increment): addresses 0-5 line 5, 6-9 line 6, 10-11 line 8,
  // 12- line 7.
  const std::string t("\x06\x01" "\x04\x02" "\x02\xff", 6);
  const auto k = PythonLineTable::kLnotab;
  EXPECT_EQ(Line(k, t, 5, -1), 5);
  EXPECT_EQ(Line(k, t, 5, 0), 5);
  EXPECT_EQ(Line(k, t, 5, 5), 5);
  EXPECT_EQ(Line(k, t, 5, 6), 6);
  EXPECT_EQ(Line(k, t, 5, 10), 8);
  EXPECT_EQ(Line(k, t, 5, 12), 7);
  EXPECT_EQ(Line(k, t, 5, 100), 7);
}

TEST(PythonLineTest, Linetable310) {
  // (address delta, signed line delta, -128: no line): 0-3 line 6, 4-7 none, 8-9 line 9.
  const std::string t("\x04\x01" "\x04\x80" "\x02\x03", 6);
  const auto k = PythonLineTable::kLinetable310;
  EXPECT_EQ(Line(k, t, 5, -2), 5);
  EXPECT_EQ(Line(k, t, 5, 0), 6);
  EXPECT_EQ(Line(k, t, 5, 3), 6);
  EXPECT_EQ(Line(k, t, 5, 4), 0);
  EXPECT_EQ(Line(k, t, 5, 8), 9);
  EXPECT_EQ(Line(k, t, 5, 10), 0) << "past the table";
}

}  // namespace
}  // namespace hook
}  // namespace xtimer
