// The browser entry point: no Node import anywhere in its module graph, and
// its connect() working over a platform WebSocket. Node 20 has one only
// behind --experimental-websocket, so there this file runs itself again in a
// child process with that flag; Node 22 and later have it built in.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { connect, ShieldError, type ReconnectInfo } from '@shieldrpc/client';
import { FakeGateway, hex, until } from './helpers/fake-gateway.js';

const dist = fileURLToPath(new URL('../../dist/', import.meta.url));

/** Every module reachable from entry by static or dynamic import, with its specifiers. */
function moduleGraph(entry: string): Map<string, string[]> {
  const seen = new Map<string, string[]>();
  const visit = (file: string) => {
    if (seen.has(file)) return;
    const src = readFileSync(file, 'utf8');
    // tsc writes static imports and re-exports one per line at the top level.
    const specs = [
      ...src.matchAll(/^(?:import|export)\s+(?:\{[^}]*\}|\*(?:\s+as\s+\w+)?|\w+(?:\s*,\s*\{[^}]*\})?)\s+from\s*['"]([^'"]+)['"]/gm),
      ...src.matchAll(/^import\s*['"]([^'"]+)['"]/gm),
      ...src.matchAll(/\bimport\(\s*['"]([^'"]+)['"]\s*\)/g),
    ].map((m) => m[1]!);
    seen.set(file, specs);
    for (const s of specs) if (s.startsWith('.')) visit(path.resolve(path.dirname(file), s));
  };
  visit(entry);
  return seen;
}

describe('browser entry point', () => {
  test('imports nothing of Node, and uses no Node global', () => {
    const graph = moduleGraph(path.join(dist, 'index.js'));
    assert.ok(graph.size >= 5, `${graph.size} modules`);
    for (const [file, specs] of graph) {
      assert.ok(!file.includes(`${path.sep}node${path.sep}`), `${file} is in dist/node`);
      for (const s of specs) assert.ok(s.startsWith('./') || s.startsWith('../'), `${path.basename(file)} imports ${s}`);
      const src = readFileSync(file, 'utf8');
      assert.doesNotMatch(src, /\b(Buffer|process|require)\s*[.(]/, `${path.basename(file)} uses a Node global`);
    }
  });

  test('connect() refuses tcp:// and names the Node entry point', async () => {
    await assert.rejects(connect({ url: 'tcp://127.0.0.1:1' }), /@shieldrpc\/client\/node/);
  });

  const hasWebSocket = typeof (globalThis as { WebSocket?: unknown }).WebSocket === 'function';
  const canFlag = process.allowedNodeEnvironmentFlags.has('--experimental-websocket');

  if (!hasWebSocket) {
    test('connect() without a platform WebSocket says what to use', async () => {
      await assert.rejects(connect({ url: 'ws://127.0.0.1:1/ws' }), /no WebSocket on this platform/);
    });
    test('over the platform WebSocket (child process with --experimental-websocket)', { skip: !canFlag && 'this Node has no WebSocket' }, () => {
      const r = spawnSync(process.execPath, ['--experimental-websocket', '--no-warnings', '--test', fileURLToPath(import.meta.url)], {
        encoding: 'utf8',
        timeout: 60_000,
        // Not a child of this runner: its own runner reports in TAP on stdout.
        env: Object.fromEntries(Object.entries(process.env).filter(([k]) => k !== 'NODE_TEST_CONTEXT')),
      });
      assert.equal(r.status, 0, `child failed:\n${r.stdout}\n${r.stderr}`);
      assert.match(r.stdout, /# pass [1-9]/);
      assert.match(r.stdout, /# fail 0/);
    });
    return;
  }

  test('call, push, error over a binary (idlen) WebSocket', async (t) => {
    const gw = await FakeGateway.start('ws', 'idlen');
    const c = await connect({ url: gw.url, heartbeatMs: 0, reconnect: false });
    t.after(async () => {
      await c.close();
      await gw.close();
    });
    const s = await gw.accept();
    const p = c.call(1001, { user: 'alice' });
    const f = await s.next();
    assert.equal(f.text, false);
    assert.equal(hex(f.wire.subarray(0, 4)), '010003e9');
    const pushes: unknown[] = [];
    c.onPush(2101, (b) => pushes.push(b));
    s.send({ kind: 'push', route: 2101, body: '{"x":1}' }, { kind: 'response', route: 1001, rid: f.rid, body: '{"player_id":"alice"}' });
    assert.deepEqual(await p, { player_id: 'alice' });
    assert.deepEqual(pushes, [{ x: 1 }]);
    const p2 = c.call(2001, {});
    const f2 = await s.next();
    s.send({ kind: 'error', route: 0, rid: f2.rid, code: 'player.not_in_room', message: 'join a room first' });
    await assert.rejects(p2, (e: unknown) => e instanceof ShieldError && e.code === 'player.not_in_room');
  });

  test('delimiter text messages, and a resume after a drop', async (t) => {
    const gw = await FakeGateway.start('ws', 'delimiter');
    const c = await connect({ url: gw.url, envelope: 'delimiter', heartbeatMs: 0, reconnect: { baseMs: 5, maxMs: 10 } });
    t.after(async () => {
      await c.close();
      await gw.close();
    });
    const s = await gw.accept();
    const p = c.call('login', { user: 'bob' });
    const f = await s.next();
    assert.equal(f.text, true);
    assert.equal(f.wire.toString(), `{"type":"request","route":"login","request_id":${f.rid},"payload":{"user":"bob"}}`);
    s.send({ kind: 'notice', fields: { code: 'session.resume_token', token: 'tk' } }, { kind: 'response', route: 1001, rid: f.rid, body: '{}' });
    await p;
    const infos: ReconnectInfo[] = [];
    c.onReconnect((r) => infos.push(r));
    s.destroy();
    const s2 = await gw.accept();
    const first = await s2.next();
    assert.equal(first.wire.toString(), '{"type":"heartbeat","payload":{"resume":"tk"}}');
    s2.send({ kind: 'notice', fields: { code: 'session.resumed', token: 'tk2' } });
    await until(() => infos.length === 1);
    assert.deepEqual(infos, [{ resumed: true, attempt: 1 }]);
  });
});
