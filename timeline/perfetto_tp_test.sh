#!/bin/bash
# The golden job's trace, compressed (default) and plain, loaded by Perfetto's own trace processor
# and by the project's decoder: both must see the same trace (timeline/perfetto_tp/check_trace.py).
set -eu
XT=cli/xtimer
TMP=${TEST_TMPDIR:-/tmp}
$XT timeline timeline/testdata/node0 timeline/testdata/node1 --groups tp2-pp2-dp2 -q \
  -o "$TMP/compressed.pftrace"
$XT timeline timeline/testdata/node0 timeline/testdata/node1 --groups tp2-pp2-dp2 -q \
  --no-compress -o "$TMP/plain.pftrace"
python3 timeline/perfetto_tp/check_trace.py timeline/perfetto_tp/query.mjs \
  timeline/trace_summary "$TMP/compressed.pftrace" "$TMP/plain.pftrace"

# Chunked loading (query.mjs --chunk-bytes; traces over 64 MiB need it): chunks of 1000 and 7
# bytes split packets and varints anywhere, and the trace processor must answer as it does with
# the whole trace in one chunk.
TP=${XTIMER_PERFETTO_TP:-/var/cache/xtimer/perfetto-tp-v55.3}
Q=("select count(*) as n from slice" "select count(*) as n from flow"
   "select ts, dur, name, category, depth from slice order by ts, track_id, depth"
   "select count(*) as n from args")
size=$(stat -c %s "$TMP/compressed.pftrace")
whole=$(node timeline/perfetto_tp/query.mjs "$TP" "$TMP/compressed.pftrace" "${Q[@]}" \
  2>"$TMP/whole.err")
grep -q "fed $size bytes in 1 chunks" "$TMP/whole.err"
for n in 1000 7; do
  got=$(node timeline/perfetto_tp/query.mjs --chunk-bytes $n "$TP" "$TMP/compressed.pftrace" \
    "${Q[@]}" 2>"$TMP/chunked.err")
  grep -q "fed $size bytes in $(( (size + n - 1) / n )) chunks" "$TMP/chunked.err"
  if [ "$got" != "$whole" ]; then
    echo "FAIL: $n-byte chunks give other answers than the whole trace"
    diff <(echo "$whole") <(echo "$got") | head -20
    exit 1
  fi
  echo "chunks of $n bytes: the same answers as the whole trace"
done
python3 timeline/perfetto_tp/check_trace.py --chunk-bytes 1000 timeline/perfetto_tp/query.mjs \
  timeline/trace_summary "$TMP/plain.pftrace"
if node timeline/perfetto_tp/query.mjs --chunk-bytes 0 "$TP" "$TMP/plain.pftrace" 2>/dev/null; then
  echo "FAIL: query.mjs accepted --chunk-bytes 0"
  exit 1
fi
# Pipeline sends between two nodes, every other receive posted before its send: Perfetto's flow
# table must show each flow from the Send to the receiver's "Recv done" instant.
timeline/write_synthetic_job "$TMP/p2p" 4 2 4 --p2p >/dev/null
$XT timeline "$TMP/p2p/node0" "$TMP/p2p/node1" -q -o "$TMP/p2p.pftrace"
out=$(python3 timeline/perfetto_tp/check_trace.py timeline/perfetto_tp/query.mjs \
  timeline/trace_summary "$TMP/p2p.pftrace")
echo "$out"
# 2 senders x 4 steps; odd steps (1 and 3) post the receive first.
grep -q "8 send -> receive flows in the data's direction (4 receives posted before" <<<"$out"

# NVTX host slices (docs/perfetto.md "NVTX"): 4 ranks x 3 steps, each train_step with forward,
# all_reduce_wait and the step_done mark nested in it, and data_loader start/end ranges that
# overlap the next step's on two lanes per rank. Each rank's AllReduce lies inside its
# all_reduce_wait on the aligned clock (node1's clock is skewed by a millisecond and corrected).
timeline/write_synthetic_job "$TMP/nvtx" 4 2 3 --nvtx >/dev/null
$XT timeline "$TMP/nvtx/node0" "$TMP/nvtx/node1" -q -o "$TMP/nvtx.pftrace"
nesting="select s.name, s.depth, substr(t.name, 1, 11) as track,
  (select p.name from slice p where p.id = s.parent_id) as parent, count(*) as n
  from slice s join thread_track tt on s.track_id = tt.id join thread t using(utid)
  where s.category = 'nvtx' group by 1, 2, 3, 4 order by 1, 2, 3, 4"
lanes="select count(distinct track_id) as n from slice where name = 'data_loader'"
inside="select count(*) as n from slice a join thread_track ta on a.track_id = ta.id
  join thread tha on ta.utid = tha.utid join slice w join thread_track tw on w.track_id = tw.id
  join thread thw on tw.utid = thw.utid where a.name = 'AllReduce' and w.name = 'all_reduce_wait'
  and tha.upid = thw.upid and w.ts <= a.ts and a.ts + a.dur <= w.ts + w.dur"
got=$(node timeline/perfetto_tp/query.mjs "$TP" "$TMP/nvtx.pftrace" "$nesting" "$lanes" "$inside" \
  2>/dev/null | sed 's/.*"rows"://')
want='[{"name":"all_reduce_wait","depth":1,"track":"NVTX thread","parent":"train_step","n":12},{"name":"data_loader","depth":0,"track":"NVTX start/","parent":null,"n":12},{"name":"forward","depth":1,"track":"NVTX thread","parent":"train_step","n":12},{"name":"step_done","depth":1,"track":"NVTX thread","parent":"train_step","n":12},{"name":"train_step","depth":0,"track":"NVTX thread","parent":null,"n":12}]}
[{"n":8}]}
[{"n":12}]}'
if [ "$got" != "$want" ]; then
  echo "FAIL: NVTX slices in the trace processor"
  diff <(echo "$want") <(echo "$got")
  exit 1
fi
echo "NVTX: nested host slices per thread, start/end lanes, on the GPU ops' clock"

# Steps and host -> GPU flows (docs/perfetto.md "Steps", "Flows"): each rank's train_step is a
# marked step, so its steps track holds 2 slices (3 marks), each from one train_step's start to
# the next one's; every op launched inside the rank's one open push/pop range gets a flow from
# the innermost one (AllGathers from forward, AllReduces from train_step: launched between
# forward and all_reduce_wait), in the same process, forward in time.
steps="select s.name, s.ts + s.dur = (select min(b.ts) from slice b join thread_track tb on b.track_id =
  tb.id join thread thb using(utid) where b.name = 'train_step' and thb.upid = t.upid and
  b.ts > s.ts) as to_next, exists (select 1 from slice a join thread_track ta on a.track_id =
  ta.id join thread tha using(utid) where a.name = 'train_step' and tha.upid = t.upid and
  a.ts = s.ts) as at_mark, count(*) as n from slice s join thread_track tt on s.track_id = tt.id
  join thread t using(utid) where t.name = 'steps' and s.category = 'step' group by 1, 2, 3
  order by 1"
flows="select so.name as host, si.name as gpu, count(*) as n from flow f
  join slice so on f.slice_out = so.id join slice si on f.slice_in = si.id
  where so.category = 'nvtx' and si.name in ('AllGather', 'AllReduce') group by 1, 2 order by 1"
astray="select count(*) as n from flow f join slice so on f.slice_out = so.id
  join thread_track tso on so.track_id = tso.id join thread tho on tso.utid = tho.utid
  join slice si on f.slice_in = si.id join thread_track tsi on si.track_id = tsi.id
  join thread thi on tsi.utid = thi.utid
  where so.category = 'nvtx' and (tho.upid != thi.upid or si.ts < so.ts or so.name = 'data_loader')"
got=$(node timeline/perfetto_tp/query.mjs "$TP" "$TMP/nvtx.pftrace" "$steps" "$flows" "$astray" \
  2>/dev/null | sed 's/.*"rows"://')
want='[{"name":"step 1","to_next":1,"at_mark":1,"n":4},{"name":"step 2","to_next":1,"at_mark":1,"n":4}]}
[{"host":"forward","gpu":"AllGather","n":12},{"host":"train_step","gpu":"AllReduce","n":12}]}
[{"n":0}]}'
if [ "$got" != "$want" ]; then
  echo "FAIL: steps track or host -> GPU flows in the trace processor"
  diff <(echo "$want") <(echo "$got")
  exit 1
fi
echo "steps: a marked step from one mark to the next; flows from the launching NVTX range"
python3 timeline/perfetto_tp/check_trace.py timeline/perfetto_tp/query.mjs \
  timeline/trace_summary "$TMP/nvtx.pftrace"
