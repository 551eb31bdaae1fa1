// Preload for `node --require`: pins every TCP listener of the process to the loopback interface.
//
// @modelcontextprotocol/server-everything calls `app.listen(PORT)` with no host, which Node binds
// to all interfaces. The interop tests must only ever open ports on 127.0.0.1, so this rewrites
// each host-less `server.listen(...)` call before Node sees it. A listen that names a host or a
// Unix socket path is left alone.
'use strict';

const net = require('node:net');

const LOOPBACK = '127.0.0.1';
const isPort = (v) => typeof v === 'number' || (typeof v === 'string' && /^[0-9]+$/.test(v));

function pinToLoopback(args) {
  const [first, second] = args;
  if (isPort(first)) {
    // listen(port[, host][, backlog][, callback])
    return typeof second === 'string' ? args : [first, LOOPBACK, ...args.slice(1)];
  }
  if (first === undefined || typeof first === 'function') {
    // listen([callback]): a random port on all interfaces
    return [0, LOOPBACK, ...args];
  }
  if (first !== null && typeof first === 'object' && first.path === undefined && first.host === undefined
      && first.port !== undefined) {
    // listen(options[, callback])
    return [{ ...first, host: LOOPBACK }, ...args.slice(1)];
  }
  return args; // a handle, a Unix socket path or an explicit host
}

const originalListen = net.Server.prototype.listen;
net.Server.prototype.listen = function listenOnLoopback(...args) {
  return originalListen.apply(this, pinToLoopback(args));
};
