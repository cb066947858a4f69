// Loads a trace into Perfetto's own trace processor (the WebAssembly build ui.perfetto.dev runs,
// installed by tools/install-perfetto-tp.sh) and runs SQL queries on it, under Node.js.
//
//   node query.mjs [--chunk-bytes N] TP_DIR TRACE.pftrace 'SQL' ['SQL' ...]
//
// Prints one JSON line per query: {"sql": ..., "rows": [{column: value, ...}, ...]} or
// {"sql": ..., "error": ...}. Integers beyond 2^53 are printed as strings. Exit status 1 when the
// trace cannot be parsed or a query fails.
//
// The trace is read and handed to the trace processor in chunks of N bytes (default 16 MiB), as
// the UI does: one request to the engine may carry at most 64 MiB, so a larger trace sent whole
// fails with "RPC framing error, message too large". stderr gets the number of chunks.
//
// The UI runs the trace processor in a web worker (engine_bundle) that talks to the page's
// engine (engine.mjs, class EngineBase) over a MessagePort. Here both halves run in one Node.js
// process: the worker bundle is evaluated with just enough of a worker's globals, and three of
// its lines are adjusted for Node (the 32-bit build; the .wasm bytes handed over directly rather
// than fetched; a handle on the bridge object). The files are pinned by SHA-256, so the anchors
// below are known to exist; if one is missing the script says so.
import fs from 'node:fs';
import path from 'node:path';
import {pathToFileURL} from 'node:url';
import vm from 'node:vm';

const DEFAULT_CHUNK_BYTES = 16 * 1024 * 1024;
const MAX_CHUNK_BYTES = 64 * 1024 * 1024 - 1024;  // the engine's request limit, less framing
const usage = 'usage: node query.mjs [--chunk-bytes N] TP_DIR TRACE.pftrace SQL...';
let args = process.argv.slice(2);
let chunkBytes = DEFAULT_CHUNK_BYTES;
if (args[0] === '--chunk-bytes') {
  chunkBytes = Number(args[1]);
  if (!Number.isInteger(chunkBytes) || chunkBytes < 1 || chunkBytes > MAX_CHUNK_BYTES) {
    console.error(`query.mjs: --chunk-bytes wants an integer from 1 to ${MAX_CHUNK_BYTES}`);
    console.error(usage);
    process.exit(2);
  }
  args = args.slice(2);
}
const [tpDir, tracePath, ...queries] = args;
if (!tpDir || !tracePath) {
  console.error(usage);
  process.exit(2);
}

const {EngineBase} = await import(pathToFileURL(path.join(tpDir, 'engine.mjs')).href);

globalThis.self = globalThis;
globalThis.WorkerGlobalScope = function WorkerGlobalScope() {};
globalThis.location = {href: pathToFileURL(tpDir).href + '/'};
globalThis.xtimerWasmBytes = new Uint8Array(fs.readFileSync(path.join(tpDir, 'trace_processor.wasm')));

let bundle = fs.readFileSync(path.join(tpDir, 'engine_bundle.node.js'), 'utf8');
const edits = [
  ['this.useMemory64 = hasMemory64Support();', 'this.useMemory64 = false;'],
  ['locateFile: (s) => s,', 'locateFile: (s) => s, wasmBinary: globalThis.xtimerWasmBytes,'],
  ['const wasmBridge = new wasm_bridge_1.WasmBridge();',
   'const wasmBridge = new wasm_bridge_1.WasmBridge(); globalThis.xtimerBridge = wasmBridge;'],
];
for (const [from, to] of edits) {
  if (!bundle.includes(from)) {
    console.error(`query.mjs: engine_bundle.node.js has no "${from}": not the pinned version`);
    process.exit(1);
  }
  bundle = bundle.replace(from, to);
}
vm.runInThisContext(bundle, {filename: 'engine_bundle.node.js'});
const bridge = globalThis.xtimerBridge;
while (!bridge.reqBufferAddr) await new Promise((resolve) => setTimeout(resolve, 5));

class NodeEngine extends EngineBase {
  mode = 'WASM';
  id = 'xtimer-test';
  constructor(port) {
    super();
    this.port = port;
    port.onmessage = (m) => this.onRpcResponseBytes(m.data);
  }
  rpcSendRequestBytes(data) {
    this.port.postMessage(data);
  }
}

const channel = new MessageChannel();
bridge.initialize(channel.port1);
const engine = new NodeEngine(channel.port2);
// Reads the trace a chunk at a time (memory stays at one chunk) and feeds each to the engine.
async function feed(file) {
  const fd = fs.openSync(file, 'r');
  let chunks = 0, bytes = 0;
  try {
    const buf = new Uint8Array(chunkBytes);
    for (;;) {
      const n = fs.readSync(fd, buf, 0, chunkBytes, null);
      if (n === 0) break;
      await engine.parse(buf.slice(0, n));  // a copy: the engine may keep it after we reuse buf
      ++chunks;
      bytes += n;
    }
  } finally {
    fs.closeSync(fd);
  }
  await engine.notifyEof();
  console.error(`query.mjs: fed ${bytes} bytes in ${chunks} chunks of up to ${chunkBytes}`);
}
await feed(tracePath);
for (const sql of queries) {
  let result;
  try {
    result = await engine.query(sql);
  } catch (e) {  // QueryError
    console.log(JSON.stringify({sql, error: String(e.message || e)}));
    process.exitCode = 1;
    continue;
  }
  const columns = result.columns();
  const rows = [];
  for (const it = result.iter({}); it.valid(); it.next()) {
    const row = {};
    for (const c of columns) {
      const v = it.get(c);
      row[c] = typeof v === 'bigint' ? (Number.isSafeInteger(Number(v)) ? Number(v) : String(v)) : v;
    }
    rows.push(row);
  }
  console.log(JSON.stringify({sql, rows}));
}
channel.port1.close();
channel.port2.close();
