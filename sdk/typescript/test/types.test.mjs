// The published .d.ts files as TypeScript consumers see them: a Node project
// (NodeNext; ESM and CJS files, seed 002's TypeScript example verbatim) and a
// browser/edge project (bundler resolution, DOM lib, no Node types).
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createRequire } from 'node:module';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');

for (const config of ['tsconfig.json', 'tsconfig.browser.json']) {
  test(`test/types/${config} type-checks against dist/*.d.ts`, { timeout: 120_000 }, async () => {
    const project = fileURLToPath(new URL(`./types/${config}`, import.meta.url));
    const result = await promisify(execFile)(process.execPath, [tsc, '-p', project], { timeout: 110_000 }).catch((e) => e);
    assert.equal(result.code ?? 0, 0, `${result.stdout}${result.stderr}`);
  });
}
