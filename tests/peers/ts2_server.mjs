#!/usr/bin/env node
// mcpwire's test server on the official TypeScript SDK v2 (`@modelcontextprotocol/server`), for the
// interop tests (tests/support/peers.rs starts it; scripts/install-peers installs the SDK).
//
// One `createMcpHandler` endpoint at http://127.0.0.1:PORT/mcp serves protocol 2026-07-28 (stateless,
// a `_meta` envelope on every request, `server/discover`) and, unless `--legacy reject`, the 2025
// initialize path from the same tool definitions. Loopback only: it binds 127.0.0.1 and answers
// 403 to a Host or Origin that is not localhost (the SDK's DNS-rebinding guards).
//
// usage: node ts2_server.mjs --port N [--legacy stateless|reject] [--response-mode auto|sse|json]
//                            [--keepalive-ms N] [--ttl-ms N] [--cache-scope private|public]
//                            [--sdk-dir DIR]
//   --legacy stateless   (default) 2025-era requests are served too, each by a fresh server over
//                        the SDK's stateless Streamable HTTP transport (no Mcp-Session-Id; GET and
//                        DELETE answer 405)
//   --legacy reject      2026-07-28 only: 2025-era requests get -32022 (unsupported version)
//   --response-mode      how 2026-07-28 answers are framed: auto (default: JSON, or SSE once the
//                        call sends a notification first), sse (always), json (never: the
//                        call's notifications are dropped)
//   --keepalive-ms N     SSE keep-alive comment interval (SDK default 15000; 0 = none)
//   --ttl-ms N, --cache-scope S
//                        cache hint on the 2026-07-28 results of server/discover and tools/list
//                        (SDK default ttlMs 0, cacheScope private)
//   --sdk-dir DIR        the folder whose node_modules holds the SDK (default
//                        $MCPWIRE_PEERS_DIR/ts2, else <repo>/target/peers/ts2)
// The line "ts2_server: listening on http://127.0.0.1:PORT/mcp ..." on stderr says it is ready.
//
// Tools (the same in both eras unless noted):
//   echo {text}                    text content: the text
//   add {a, b}                     text "a + b = s" and structuredContent {sum} (an outputSchema)
//   slow_progress {steps?=3, delay?=0.1}
//                                  waits `delay` s before each of `steps` steps; with a
//                                  progressToken, notifications/progress {progress i, total steps,
//                                  message "step i of steps"} after each; stops early when the
//                                  request is cancelled (logs "slow_progress: cancelled after N")
//   fail {message?="boom"}         isError result with the message as text
//   region_echo {region, text?}    `region` is annotated "x-mcp-header": "Region": the result gives
//                                  the argument and the Mcp-Param-Region header as this request
//                                  carried it ({region, header, text}; header null when absent)
//   confirm {action}               asks the client for input. 2026-07-28: `input_required` with an
//                                  elicitation (key "confirm", form {confirmed: boolean}) and a
//                                  requestState; the retry must echo that state byte for byte
//                                  (else an isError result says so). Without the elicitation
//                                  capability in the request: 400 -32021. 2025: an isError result
//                                  (the SDK cannot send elicitation/create on the stateless path)
//   link_account {url}             2026-07-28: `input_required` with a URL-mode elicitation (key
//                                  "link", no elicitationId), then "link: ACTION"
//   plan_weather {city}            2026-07-28: `input_required` with sampling/createMessage offering a
//                                  get_weather tool, toolChoice required (key "plan"), then
//                                  "stop REASON; uses: NAME INPUT, ..." from the answer
//   rounds {count?=2}              2026-07-28: `count` rounds of `input_required` that carry only a
//                                  requestState ("round k of count"), then "done after count rounds";
//                                  2025: the SDK runs the rounds itself, one plain result
//   tools_changed {}               publishes notifications/tools/list_changed to open
//                                  subscriptions/listen streams (2026-07-28)
//
// Skills (io.modelcontextprotocol/skills, with directoryRead; both eras): skill://git-workflow
// (SKILL.md, references/GUIDE.md) and skill://acme/refunds (SKILL.md), one per skills/list page.
import { createServer } from 'node:http';
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const NAME = 'ts2_server';

function fail(message) {
  process.stderr.write(`${NAME}: ${message}\n`);
  process.exit(2);
}

function parseArgs(argv) {
  const opts = {
    port: undefined,
    legacy: 'stateless',
    responseMode: 'auto',
    keepAliveMs: undefined,
    ttlMs: undefined,
    cacheScope: undefined,
    sdkDir: undefined
  };
  const choices = { legacy: ['stateless', 'reject'], responseMode: ['auto', 'sse', 'json'], cacheScope: ['private', 'public'] };
  const integer = (flag, text) => {
    if (!/^\d+$/.test(text ?? '')) fail(`${flag} needs a non-negative integer, not ${JSON.stringify(text)}`);
    return Number(text);
  };
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    const value = argv[i + 1];
    switch (flag) {
      case '--port': opts.port = integer(flag, value); i++; break;
      case '--keepalive-ms': opts.keepAliveMs = integer(flag, value); i++; break;
      case '--ttl-ms': opts.ttlMs = integer(flag, value); i++; break;
      case '--legacy': opts.legacy = value; i++; break;
      case '--response-mode': opts.responseMode = value; i++; break;
      case '--cache-scope': opts.cacheScope = value; i++; break;
      case '--sdk-dir': opts.sdkDir = value; i++; break;
      default: fail(`unknown argument ${flag} (see the usage at the top of this file)`);
    }
  }
  if (opts.port === undefined) fail('--port N is required');
  for (const [key, allowed] of Object.entries(choices)) {
    if (opts[key] !== undefined && !allowed.includes(opts[key])) fail(`${key}: ${opts[key]} is not one of ${allowed.join(', ')}`);
  }
  return opts;
}

const opts = parseArgs(process.argv.slice(2));

// The SDK is installed outside the repository; its CommonJS builds load through a require rooted
// there (an ES import would resolve from this file's folder).
const here = path.dirname(fileURLToPath(import.meta.url));
const sdkDir = opts.sdkDir
  ?? path.join(process.env.MCPWIRE_PEERS_DIR || path.join(here, '..', '..', 'target', 'peers'), 'ts2');
const sdkRequire = createRequire(path.join(sdkDir, 'package.json'));
function load(pkg) {
  try {
    return sdkRequire(pkg);
  } catch (e) {
    fail(`cannot load ${pkg} from ${sdkDir} (run scripts/install-peers ts2): ${e.message}`);
  }
}
const { McpServer, createMcpHandler, inputRequired, acceptedContent, inputResponse } = load('@modelcontextprotocol/server');
const { toNodeHandler, localhostHostValidation, localhostOriginValidation } = load('@modelcontextprotocol/node');
const { SkillCatalog, memorySkillFiles } = load('@modelcontextprotocol/server/ext/skills');
const { z } = load('zod');
// The package's exports do not list its package.json: read it from the folder.
const sdkVersion = JSON.parse(
  readFileSync(path.join(sdkDir, 'node_modules', '@modelcontextprotocol', 'server', 'package.json'), 'utf8')).version;

const log = message => process.stderr.write(`${NAME}: ${message}\n`);
const pause = ms => new Promise(resolve => setTimeout(resolve, ms));
const text = value => ({ content: [{ type: 'text', text: value }] });

// What `confirm` hands the client to echo. It looks like JSON with spaces on purpose: a client that
// parses and re-serialises it instead of echoing the string changes it, and the retry then fails.
const confirmState = action => `{"tool": "confirm", "action": ${JSON.stringify(action)}}`;
const confirmSchema = z.object({ confirmed: z.boolean().meta({ title: 'Go ahead?' }) });

let handler; // set below; the tools_changed tool publishes through it

// The Skills extension (SEP-2640, the SDK's ext/skills): two skills from memory, one page each
// (pageSize 1, so a client follows cursors), with directoryRead.
const skillFiles = {
  'git-workflow/SKILL.md': '---\nname: git-workflow\ndescription: Follow the team\'s Git conventions\n---\n' +
    'Branch from main; see references/GUIDE.md.\n',
  'git-workflow/references/GUIDE.md': '# Guide\n\nOne commit per change.\n',
  'acme/refunds/SKILL.md': '---\nname: refunds\ndescription: Process refund requests\nlicense: MIT\n---\nAsk for the order id.\n'
};
const skills = await SkillCatalog.load(memorySkillFiles(skillFiles), { pageSize: 1 });

function registerTools(server) {
  server.registerTool('echo', {
    description: 'Returns the text unchanged.',
    inputSchema: z.object({ text: z.string() })
  }, async args => text(args.text));

  server.registerTool('add', {
    description: 'Adds two numbers: text and structuredContent {sum}.',
    inputSchema: z.object({ a: z.number(), b: z.number() }),
    outputSchema: z.object({ sum: z.number() })
  }, async ({ a, b }) => ({ ...text(`${a} + ${b} = ${a + b}`), structuredContent: { sum: a + b } }));

  server.registerTool('slow_progress', {
    description: 'Waits `delay` seconds before each of `steps` steps, reporting progress after each.',
    inputSchema: z.object({
      steps: z.number().int().min(0).max(10000).default(3),
      delay: z.number().min(0).max(60).default(0.1)
    })
  }, async ({ steps, delay }, ctx) => {
    const token = ctx.mcpReq._meta?.progressToken;
    for (let step = 1; step <= steps; step++) {
      await pause(delay * 1000);
      if (ctx.mcpReq.signal.aborted) {
        log(`slow_progress: cancelled after ${step - 1} steps`);
        return text(`cancelled after ${step - 1} steps`);
      }
      if (token !== undefined) {
        await ctx.mcpReq.notify({
          method: 'notifications/progress',
          params: { progressToken: token, progress: step, total: steps, message: `step ${step} of ${steps}` }
        });
      }
    }
    return text(`done after ${steps} steps`);
  });

  server.registerTool('fail', {
    description: 'Always a tool error (isError) with the message as text.',
    inputSchema: z.object({ message: z.string().default('boom') })
  }, async ({ message }) => ({ ...text(message), isError: true }));

  server.registerTool('region_echo', {
    description: 'Returns `region` (sent by 2026-07-28 clients as the Mcp-Param-Region header too) ' +
      'and the Mcp-Param-Region header this request carried.',
    inputSchema: z.object({
      region: z.string().meta({ 'x-mcp-header': 'Region' }),
      text: z.string().optional()
    }),
    outputSchema: z.object({ region: z.string(), header: z.string().nullable(), text: z.string().nullable() })
  }, async (args, ctx) => {
    const header = ctx.http?.req?.headers.get('mcp-param-region') ?? null;
    const out = { region: args.region, header, text: args.text ?? null };
    return { ...text(JSON.stringify(out)), structuredContent: out };
  });

  server.registerTool('confirm', {
    description: 'Asks the client to confirm `action` (2026-07-28: input_required with an elicitation ' +
      'and a requestState), then says whether it was confirmed.',
    inputSchema: z.object({ action: z.string() })
  }, async ({ action }, ctx) => {
    const answer = inputResponse(ctx.mcpReq.inputResponses, 'confirm');
    if (answer.kind === 'missing') {
      return inputRequired({
        inputRequests: {
          confirm: inputRequired.elicit({ message: `Confirm: ${action}?`, requestedSchema: confirmSchema })
        },
        requestState: confirmState(action)
      });
    }
    const state = ctx.mcpReq.requestState();
    if (state !== confirmState(action)) {
      return { ...text(`requestState was not echoed byte for byte: got ${JSON.stringify(state ?? null)}`), isError: true };
    }
    if (answer.kind !== 'elicit' || answer.action !== 'accept') {
      return text(`not confirmed (${answer.kind === 'elicit' ? answer.action : answer.kind}): ${action}`);
    }
    const content = acceptedContent(ctx.mcpReq.inputResponses, 'confirm', confirmSchema);
    if (content === undefined) return { ...text('the elicitation answer does not match {confirmed: boolean}'), isError: true };
    return text(`${content.confirmed ? 'confirmed' : 'not confirmed'}: ${action}`);
  });

  server.registerTool('link_account', {
    description: 'Asks the client to open `url` (2026-07-28: input_required with a URL-mode ' +
      'elicitation, key "link"), then says what the user chose.',
    inputSchema: z.object({ url: z.string() })
  }, async ({ url }, ctx) => {
    const answer = inputResponse(ctx.mcpReq.inputResponses, 'link');
    if (answer.kind === 'missing') {
      return inputRequired({
        inputRequests: { link: inputRequired.elicitUrl({ message: 'Link your account to go on.', url }) }
      });
    }
    if (answer.kind !== 'elicit') return { ...text(`not an elicitation answer: ${answer.kind}`), isError: true };
    return text(`link: ${answer.action}`);
  });

  server.registerTool('plan_weather', {
    description: 'Asks the client\'s model for a plan with a get_weather tool (2026-07-28: ' +
      'input_required with sampling/createMessage offering tools, toolChoice required, key "plan"), ' +
      'then describes the tool uses it got.',
    inputSchema: z.object({ city: z.string() })
  }, async ({ city }, ctx) => {
    const answer = inputResponse(ctx.mcpReq.inputResponses, 'plan');
    if (answer.kind === 'missing') {
      return inputRequired({
        inputRequests: {
          plan: inputRequired.createMessage({
            messages: [{ role: 'user', content: { type: 'text', text: `What is the weather in ${city}?` } }],
            tools: [{
              name: 'get_weather',
              description: 'Current weather for a city',
              inputSchema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] }
            }],
            toolChoice: { mode: 'required' },
            maxTokens: 200
          })
        }
      });
    }
    if (answer.kind !== 'sampling') return { ...text(`not a sampling answer: ${answer.kind}`), isError: true };
    const blocks = Array.isArray(answer.result.content) ? answer.result.content : [answer.result.content];
    const uses = blocks.filter(b => b?.type === 'tool_use').map(b => `${b.name} ${JSON.stringify(b.input)}`);
    return text(`stop ${answer.result.stopReason}; uses: ${uses.join(', ')}`);
  });

  server.registerTool('rounds', {
    description: 'Answers input_required with only a requestState `count` times, then completes.',
    inputSchema: z.object({ count: z.number().int().min(0).max(100).default(2) })
  }, async ({ count }, ctx) => {
    const state = ctx.mcpReq.requestState();
    let done = 0;
    if (state !== undefined) {
      const m = /^round (\d+) of (\d+)$/.exec(state);
      if (!m || Number(m[2]) !== count) return { ...text(`unexpected requestState ${JSON.stringify(state)}`), isError: true };
      done = Number(m[1]);
    }
    if (done < count) return inputRequired({ requestState: `round ${done + 1} of ${count}` });
    return text(`done after ${count} rounds`);
  });

  server.registerTool('tools_changed', {
    description: 'Publishes notifications/tools/list_changed to open subscriptions/listen streams.',
    inputSchema: z.object({})
  }, async () => {
    handler.notify.toolsChanged();
    return text('published tools/list_changed');
  });
}

function buildServer() {
  const cacheHint = {
    ...(opts.ttlMs !== undefined && { ttlMs: opts.ttlMs }),
    ...(opts.cacheScope !== undefined && { cacheScope: opts.cacheScope })
  };
  const hinted = Object.keys(cacheHint).length > 0;
  const server = new McpServer(
    { name: 'mcpwire-ts2-test-server', version: '1.0.0' },
    {
      capabilities: { tools: { listChanged: true } },
      instructions: 'Test tools for mcpwire interop tests (TypeScript SDK v2).',
      ...(hinted && { cacheHints: { 'server/discover': cacheHint, 'tools/list': cacheHint } })
    }
  );
  registerTools(server);
  skills.attach(server);
  return server;
}

handler = createMcpHandler(buildServer, {
  legacy: opts.legacy,
  responseMode: opts.responseMode,
  ...(opts.keepAliveMs !== undefined && { keepAliveMs: opts.keepAliveMs }),
  onerror: error => log(`handler: ${error?.message ?? error}`)
});
const serve = toNodeHandler(handler, { onerror: error => log(`node adapter: ${error?.message ?? error}`) });
const hostAllowed = localhostHostValidation();
const originAllowed = localhostOriginValidation();

const http = createServer((req, res) => {
  const target = (req.url ?? '/').split('?', 1)[0];
  if (target !== '/mcp') {
    res.writeHead(404, { 'content-type': 'text/plain' }).end('not found: the endpoint is /mcp\n');
    return;
  }
  if (!hostAllowed(req, res) || !originAllowed(req, res)) return;
  serve(req, res).catch(error => log(`request: ${error?.message ?? error}`));
});
http.on('error', error => fail(`listen on 127.0.0.1:${opts.port}: ${error.message}`));
http.listen(opts.port, '127.0.0.1', () => {
  log(`listening on http://127.0.0.1:${opts.port}/mcp (@modelcontextprotocol/server ${sdkVersion}, ` +
    `node ${process.version}, legacy ${opts.legacy}, response mode ${opts.responseMode})`);
});

let stopping = false;
async function stop(signal) {
  if (stopping) return;
  stopping = true;
  log(`${signal}: stopping`);
  await handler.close().catch(() => {});
  http.close();
  http.closeAllConnections();
  process.exit(0);
}
process.on('SIGTERM', () => void stop('SIGTERM'));
process.on('SIGINT', () => void stop('SIGINT'));
