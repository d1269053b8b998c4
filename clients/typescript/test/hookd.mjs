// A real hookd for the tests: `hookd serve` on loopback with SQLite in a
// temporary directory, an admin key made by `hookd apikey create`, a
// receiver that reports each delivery, and a proxy in front of hookd that
// can answer 429 before passing requests on. HOOKD_BIN names the binary
// (make test-clients builds it); without it the tests skip, except under
// CI=true, where they fail.
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';

export function hookdBinary(t) {
  const bin = process.env.HOOKD_BIN;
  if (!bin) {
    if (process.env.CI === 'true') throw new Error('HOOKD_BIN is not set: make test-clients builds hookd and sets it');
    t.skip('HOOKD_BIN not set: run make test-clients');
  }
  return bin;
}

export async function startHookd(bin) {
  const dir = mkdtempSync(join(tmpdir(), 'hookd-client-ts-'));
  const db = join(dir, 'hookd.db');
  const out = execFileSync(bin, ['apikey', 'create', '--owner', 'acme', '--db', db], { encoding: 'utf8' });
  const key = out.trim().split('\n').pop();
  const proc = spawn(bin, ['serve', '--db', db, '--addr', '127.0.0.1:0', '--egress-allow', '127.0.0.1/32'], { stdio: ['ignore', 'pipe', 'pipe'] });
  let logs = '';
  proc.stderr.on('data', (b) => { logs += b; });
  const url = await new Promise((resolve, reject) => {
    const lines = createInterface({ input: proc.stdout });
    lines.on('line', (line) => {
      const m = /^hookd listening on (http:\/\/\S+)/.exec(line);
      if (m) resolve(m[1]);
    });
    proc.once('exit', (code) => reject(new Error(`hookd exited at start (${code}):\n${logs}`)));
  });
  return {
    url,
    key,
    // newKey runs hookd apikey create with args and returns the key.
    newKey: (...args) => execFileSync(bin, ['apikey', 'create', '--db', db, ...args], { encoding: 'utf8' }).trim().split('\n').pop(),
    logs: () => logs,
    async stop() {
      const exited = new Promise((resolve) => proc.once('exit', resolve));
      proc.kill('SIGTERM');
      await exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

// startReceiver answers 200 to every POST and resolves next() with each body.
export async function startReceiver() {
  const got = [];
  const waiters = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => { body += c; });
    req.on('end', () => {
      res.writeHead(200).end();
      const w = waiters.shift();
      if (w) w(JSON.parse(body));
      else got.push(JSON.parse(body));
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    next: () => (got.length ? Promise.resolve(got.shift()) : new Promise((resolve) => waiters.push(resolve))),
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}

// startProxy passes requests to target; throttle(n, retryAfter, status)
// makes it answer the next n requests status (default 429) with that
// Retry-After. seen lists every request's method, path and Idempotency-Key.
export async function startProxy(target) {
  const seen = [];
  let throttled = 0;
  let retryAfter = '1';
  let status = 429;
  const server = createServer((req, res) => {
    seen.push({ method: req.method, path: req.url, key: req.headers['idempotency-key'] });
    if (throttled > 0) {
      throttled--;
      req.resume();
      res.writeHead(status, { 'Retry-After': retryAfter, 'Content-Type': 'text/plain' }).end('slow down');
      return;
    }
    const up = new URL(target);
    const fwd = request({ host: up.hostname, port: up.port, method: req.method, path: req.url, headers: req.headers }, (r) => {
      res.writeHead(r.statusCode, r.headers);
      r.pipe(res);
    });
    req.pipe(fwd);
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    seen,
    throttle(n, after, code = 429) { throttled = n; retryAfter = after; status = code; },
    close: () => new Promise((resolve) => { server.closeAllConnections(); server.close(resolve); }),
  };
}
