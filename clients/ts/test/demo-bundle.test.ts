// The example game's page (examples/web) plays through this package,
// bundled into examples/web/shield.js by `npm run build:demo` and committed
// so that the gateway serves it without npm. This fails while the
// committed bundle is older than src/.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const pkg = fileURLToPath(new URL('../../', import.meta.url)); // build/test -> clients/ts

test('examples/web/shield.js is the current bundle of the browser entry point', () => {
  const r = spawnSync(process.execPath, [path.join(pkg, 'scripts', 'build-demo.mjs'), '--check'], { cwd: pkg, encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr || r.stdout);
});
