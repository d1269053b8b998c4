// docs/clients.md's TypeScript example, type-checked against the built
// package and run against a real hookd.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { hookdBinary, startHookd, startReceiver } from './hookd.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
let hookd, receiver;

before(async (t) => {
  const bin = hookdBinary(t);
  if (!bin) return;
  hookd = await startHookd(bin);
  receiver = await startReceiver();
});

after(async () => {
  await receiver?.close();
  await hookd?.stop();
});

test("the docs' example type-checks and runs", async (t) => {
  if (!hookd) return t.skip('no hookd (HOOKD_BIN not set)');
  const doc = readFileSync(join(root, '..', '..', 'docs', 'clients.md'), 'utf8');
  const code = /```ts\n([\s\S]*?)```/.exec(doc)[1]
    .replace("'@hookd/client'", JSON.stringify(join(root, 'dist', 'index.js')))
    .replace('process.env.HOOKD_KEY!', JSON.stringify(hookd.key))
    .replace('https://hookd.example.com', hookd.url)
    .replace('https://shop.example.com', receiver.url);
  const dir = mkdtempSync(join(tmpdir(), 'hookd-client-doc-'));
  try {
    writeFileSync(join(dir, 'doc.ts'), code);
    writeFileSync(join(dir, 'package.json'), '{"type": "module"}\n');
    execFileSync(process.execPath, [tsc, '--strict', '--target', 'ES2022', '--module', 'ES2022', '--moduleResolution', 'bundler',
      '--lib', 'ES2022,DOM', '--outDir', dir, join(dir, 'doc.ts')], { stdio: 'pipe' });
    const out = execFileSync(process.execPath, [join(dir, 'doc.js')], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    assert.match(out, /keep this secret: whsec_/);
  } catch (e) {
    assert.fail(`${e.message}\n${e.stdout ?? ''}${e.stderr ?? ''}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
