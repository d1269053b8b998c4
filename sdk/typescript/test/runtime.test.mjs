// Runtime portability: Node 18's missing global WebCrypto, a Buffer-free
// (browser-like) global scope, and no runtime dependencies or Node-only APIs
// in the shipped code.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, test } from 'node:test';
import { promisify } from 'node:util';

const run = promisify(execFile);
const root = fileURLToPath(new URL('..', import.meta.url));

describe('runtimes', { timeout: 30_000 }, () => {
  test('works without globalThis.crypto (Node 18 default), ESM and CJS', async (t) => {
    const script = fileURLToPath(new URL('./child/no-global-webcrypto.mjs', import.meta.url));
    const result = await run(process.execPath, ['--no-experimental-global-webcrypto', script], { cwd: root, timeout: 15_000 }).catch((e) => e);
    if (result.code === 3 || /bad option/.test(result.stderr ?? '')) return t.skip('this Node cannot disable the global WebCrypto');
    assert.equal(result.stdout.trim(), 'ok', result.stderr);
  });

  test('works without Buffer (browser-like globals)', async () => {
    const script = fileURLToPath(new URL('./child/no-buffer.mjs', import.meta.url));
    const { stdout } = await run(process.execPath, [script], { cwd: root, timeout: 15_000 });
    assert.equal(stdout.trim(), 'ok');
  });

  test('the shipped code uses no Node-only globals or modules except the lazy node:crypto fallback', () => {
    for (const dir of ['esm', 'cjs']) {
      for (const file of readdirSync(`${root}/dist/${dir}`).filter((f) => f.endsWith('.js'))) {
        const code = readFileSync(`${root}/dist/${dir}/${file}`, 'utf8').replace(/\/\/.*$|\/\*[\s\S]*?\*\//gm, '');
        assert.doesNotMatch(code, /\bBuffer\b|\bprocess\b|\batob\b|\bbtoa\b/, `${dir}/${file}`);
        const requires = [...code.matchAll(/require\("([^"]+)"\)/g)].map((m) => m[1]);
        assert.ok(requires.every((r) => r.startsWith('./')), `${dir}/${file} requires only its own files: ${requires}`);
        if (dir === 'esm') assert.doesNotMatch(code, /\brequire\(/, `${dir}/${file}`);
      }
    }
    const crypto = readFileSync(`${root}/dist/esm/crypto.js`, 'utf8');
    assert.match(crypto, /const specifier = 'node:crypto';/);
  });

  test('no runtime dependencies', () => {
    const manifest = JSON.parse(readFileSync(`${root}/package.json`, 'utf8'));
    for (const key of ['dependencies', 'peerDependencies', 'optionalDependencies', 'bundleDependencies']) {
      assert.equal(manifest[key], undefined, key);
    }
  });
});
