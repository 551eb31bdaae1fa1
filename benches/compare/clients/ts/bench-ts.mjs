// The TypeScript SDK v2 side of the comparison: runs one workload on the official client,
// `@modelcontextprotocol/client` 2.4.0 (`Client` over `StreamableHTTPClientTransport`, Node's
// fetch), and exits, so the driver can take this process's CPU time from `wait4`.
//
//   node bench-ts.mjs URL WORKLOAD N [2025|2026] [WAIT_MS]
//
// BENCH_TS_MODULES names the node_modules the SDK is installed in (scripts/install-peers
// component ts2client: $MCPWIRE_PEERS_DIR/ts2client/node_modules). The workloads are those of
// ../mcpwire (session, concurrent, big, progress, list, inflight, connect), done the way the
// SDK's documentation shows: `client.connect(transport)`, `callTool`, `listTools`, and at the end
// `transport.terminateSession()` (the DELETE, 2025) and `client.close()`. `2025` is the SDK's
// default (`versionNegotiation` absent: the plain 2025 `initialize`); `2026` pins 2026-07-28
// (`versionNegotiation: { mode: { pin: '2026-07-28' } }`: `server/discover`, then stateless
// POSTs with the `_meta` envelope). The negotiated revision and every result are checked; a
// wrong one exits with status 1. Prints the keys of ../../common (bench_common::Meter):
// wall_us, cpu_us (process.cpuUsage, every thread), hwm_kib and rss0_kib (/proc/self/status),
// timed, p50_us, p99_us, max_us; no allocation count (a garbage-collected heap has none to give).

import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';

const modules = process.env.BENCH_TS_MODULES;
if (!modules) {
  console.error('bench-ts: set BENCH_TS_MODULES to the node_modules holding @modelcontextprotocol/client');
  process.exit(2);
}
const sdk = await import(pathToFileURL(`${modules}/@modelcontextprotocol/client/dist/index.mjs`).href);
const { Client, StreamableHTTPClientTransport } = sdk;

const [url, workload, nText, era = '2025', waitText = '1000'] = process.argv.slice(2);
const n = Number.parseInt(nText, 10);
const wait = Number.parseInt(waitText, 10);
if (!url || !workload || !Number.isFinite(n) || !['2025', '2026'].includes(era)) {
  console.error('usage: node bench-ts.mjs URL WORKLOAD N [2025|2026] [WAIT_MS]');
  process.exit(2);
}
const modern = era === '2026';
const TOOLS = 100;

function statusKib(field) {
  const line = readFileSync('/proc/self/status', 'utf8').split('\n').find((l) => l.startsWith(field));
  return line ? Number.parseInt(line.slice(field.length).trim(), 10) : 0;
}

const latencies = [];
async function timed(promise) {
  const started = process.hrtime.bigint();
  const out = await promise();
  latencies.push(Number((process.hrtime.bigint() - started) / 1000n));
  return out;
}

async function connect() {
  const options = modern ? { versionNegotiation: { mode: { pin: '2026-07-28' } } } : {};
  const client = new Client({ name: 'bench-ts', version: '0.0.0' }, options);
  const transport = new StreamableHTTPClientTransport(new URL(url));
  await client.connect(transport);
  const spoken = client.getNegotiatedProtocolVersion();
  if ((spoken === '2026-07-28') !== modern) throw new Error(`the SDK speaks ${spoken}`);
  return { client, transport };
}

async function close({ client, transport }) {
  if (!modern) await transport.terminateSession();
  await client.close();
}

function onlyText(result) {
  const content = result.content ?? [];
  if (result.isError || content.length !== 1 || content[0].type !== 'text') {
    throw new Error(`not one text block: ${JSON.stringify(result).slice(0, 200)}`);
  }
  return content[0].text;
}

async function echo(client) {
  const text = onlyText(await timed(() => client.callTool({ name: 'echo', arguments: { message: 'hello' } })));
  if (text !== 'Echo: hello') throw new Error(`echo said ${text}`);
}

async function waitCall(client) {
  const result = await timed(() =>
    client.callTool({ name: 'wait', arguments: { ms: wait } }, { timeout: 120_000 }),
  );
  const text = onlyText(result);
  if (text !== `waited ${wait} ms`) throw new Error(`wait said ${text}`);
}

async function run() {
  const session = await connect();
  const { client } = session;
  switch (workload) {
    case 'session':
      for (let i = 0; i < n; i++) await echo(client);
      break;
    case 'concurrent':
      await Promise.all(Array.from({ length: n }, () => echo(client)));
      break;
    case 'inflight':
      await Promise.all(Array.from({ length: n }, () => waitCall(client)));
      break;
    case 'big': {
      const text = onlyText(await timed(() => client.callTool({ name: 'big_text', arguments: { bytes: n } })));
      if (text.length !== n || !text.startsWith('abc')) throw new Error(`big_text gave ${text.length} bytes`);
      break;
    }
    case 'progress': {
      let seen = 0;
      const result = await timed(() =>
        client.callTool({ name: 'progress_burst', arguments: { steps: n } }, { onprogress: () => { seen += 1; } }),
      );
      const text = onlyText(result);
      if (text !== `done after ${n} steps` || seen !== n) throw new Error(`${seen} progress notifications, then ${text}`);
      break;
    }
    case 'list':
      for (let i = 0; i < n; i++) {
        const { tools } = await timed(() => client.listTools());
        if (tools.length !== TOOLS) throw new Error(`tools/list gave ${tools.length} tools`);
      }
      break;
    case 'connect':
      break;
    default:
      throw new Error(`unknown workload ${workload}`);
  }
  await close(session);
}

const rss0 = statusKib('VmRSS:');
const cpu0 = process.cpuUsage();
const started = process.hrtime.bigint();
try {
  await run();
} catch (e) {
  console.error(`bench-ts ${workload} ${n}: ${e?.stack ?? e}`);
  process.exit(1);
}
const wall = Number((process.hrtime.bigint() - started) / 1000n);
const cpu = process.cpuUsage(cpu0);
latencies.sort((a, b) => a - b);
const pct = (p) => (latencies.length ? latencies[Math.min(latencies.length, Math.max(1, Math.ceil((p / 100) * latencies.length))) - 1] : 0);
console.log(
  `wall_us=${wall} cpu_us=${cpu.user + cpu.system} hwm_kib=${statusKib('VmHWM:')} rss0_kib=${rss0} ` +
    `timed=${latencies.length} p50_us=${pct(50)} p99_us=${pct(99)} max_us=${latencies.at(-1) ?? 0}`,
);
process.exit(0);
