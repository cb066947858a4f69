// Loads a trace into Perfetto's own trace processor (the WebAssembly build ui.perfetto.dev runs,
// installed by tools/install-perfetto-tp.sh) and runs SQL queries on it, under Node.js.
//
//   node query.mjs TP_DIR TRACE.pftrace 'SQL' ['SQL' ...]
//
// Prints one JSON line per query: {"sql": ..., "rows": [{column: value, ...}, ...]} or
// {"sql": ..., "error": ...}. Integers beyond 2^53 are printed as strings. Exit status 1 when the
// trace cannot be parsed or a query fails.
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

const [tpDir, tracePath, ...queries] = process.argv.slice(2);
if (!tpDir || !tracePath) {
  console.error('usage: node query.mjs TP_DIR TRACE.pftrace SQL...');
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
await engine.parse(new Uint8Array(fs.readFileSync(tracePath)));
await engine.notifyEof();
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
