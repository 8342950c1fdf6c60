// The client against the fake gateway: every frame kind, over TCP and
// WebSocket, each envelope; the gateway closing mid-call; malformed frames.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, test, type TestContext } from 'node:test';
import {
  AbortError,
  ClosedError,
  connect,
  ProtocolError,
  ShieldError,
  TimeoutError,
  type Client,
  type NodeConnectOptions,
  type StatusFrame,
} from '@shieldrpc/client/node';
import { FakeGateway, hex, idlenMessage, streamFrame, typelenMessage, unhex, until, wsFrame, type Env, type ServerConn, type Transport } from './helpers/fake-gateway.js';

type Opts = Omit<NodeConnectOptions, 'url'>;

/** A fake gateway and a client connected to it, both closed after the test. */
async function setup(t: TestContext, transport: Transport, env: Env, opts: Opts = {}): Promise<{ gw: FakeGateway; c: Client; s: ServerConn }> {
  const gw = await FakeGateway.start(transport, env);
  let c: Client | undefined;
  // Registered before the connect, so a failed connect or accept cannot leave the run hanging.
  t.after(async () => {
    await c?.close();
    await gw.close();
  });
  c = await connect({ url: gw.url, envelope: env, heartbeatMs: 0, reconnect: false, ...opts });
  const s = await gw.accept();
  return { gw, c, s };
}

const combos: [Transport, Env][] = [
  ['tcp', 'idlen'],
  ['tcp', 'typelen'],
  ['tcp', 'lenprefix'],
  ['tcp', 'delimiter'],
  ['ws', 'idlen'],
  ['ws', 'typelen'],
  ['ws', 'delimiter'],
];

for (const [transport, env] of combos) {
  describe(`${transport} ${env}`, () => {
    test('call: request on the wire, response resolves with the JSON body', async (t) => {
      const { c, s } = await setup(t, transport, env);
      const p = c.call(1001, { user: 'alice' });
      const f = await s.next();
      assert.equal(f.kind, 'request');
      assert.equal(f.route, 1001);
      assert.ok(f.rid >= 1);
      assert.equal(f.body, '{"user":"alice"}');
      if (transport === 'ws') assert.equal(f.text, env === 'delimiter');
      s.send({ kind: 'response', route: 1001, rid: f.rid, body: '{"player_id":"alice"}' });
      assert.deepEqual(await p, { player_id: 'alice' });
    });

    test('call: an error frame rejects with ShieldError', async (t) => {
      const { c, s } = await setup(t, transport, env);
      const p = c.call(2001, { x: 1 });
      const f = await s.next();
      s.send({ kind: 'error', route: 2001, rid: f.rid, code: 'player.not_in_room', message: 'join a room first' });
      await assert.rejects(p, (e: unknown) => {
        assert.ok(e instanceof ShieldError);
        assert.equal(e.code, 'player.not_in_room');
        assert.equal(e.message, 'join a room first');
        assert.equal(e.routeId, 2001);
        return true;
      });
    });

    test('answers pair by request_id, in any order', async (t) => {
      const { c, s } = await setup(t, transport, env);
      const p1 = c.call(5, 1);
      const p2 = c.call(5, 2);
      const f1 = await s.next();
      const f2 = await s.next();
      assert.notEqual(f1.rid, f2.rid);
      s.send({ kind: 'response', route: 5, rid: f2.rid, body: '"two"' }, { kind: 'response', route: 5, rid: f1.rid, body: '"one"' });
      assert.deepEqual(await Promise.all([p1, p2]), ['one', 'two']);
    });

    test('notify, pushes, heartbeat echo, notice', async (t) => {
      const { c, s } = await setup(t, transport, env);
      assert.equal(c.notify(2001, { x: 3 }), true);
      const n = await s.next();
      assert.equal(n.kind, 'notify');
      assert.equal(n.route, 2001);
      assert.equal(n.body, '{"x":3}');

      const pushes: unknown[] = [];
      c.onPush(2101, (body, info) => pushes.push([info.routeId, body]));
      const other: unknown[] = [];
      c.onAnyPush((body, info) => other.push([info.routeId, body]));
      const notices: string[] = [];
      c.onNotice((code, message) => notices.push(`${code}: ${message}`));

      assert.equal(c.heartbeat(), true);
      assert.equal((await s.next()).kind, 'heartbeat');
      s.send(
        { kind: 'heartbeat' },
        { kind: 'push', route: 2101, body: '{"x":1}' },
        { kind: 'push', route: 9, body: '[true]' },
        { kind: 'push', route: 2101, body: '{"x":2}' },
        { kind: 'notice', fields: { code: 'session.kicked', message: 'logged in elsewhere' } },
      );
      const closed = c.closed;
      s.end();
      const err = await closed;
      assert.deepEqual(pushes, [
        [2101, { x: 1 }],
        [2101, { x: 2 }],
      ]);
      assert.deepEqual(other, [[9, [true]]]);
      assert.deepEqual(notices, ['session.kicked: logged in elsewhere']);
      assert.ok(err instanceof ClosedError);
      assert.deepEqual(err.notice, { code: 'session.kicked', message: 'logged in elsewhere' });
    });

    test('the gateway closing mid-call rejects the call with ClosedError', async (t) => {
      const { c, s } = await setup(t, transport, env);
      const p = c.call(1001, {});
      await s.next();
      s.end();
      await assert.rejects(p, ClosedError);
      assert.equal(c.state, 'closed');
      await assert.rejects(c.call(1001, {}), ClosedError);
      assert.equal(c.notify(1, {}), false);
    });
  });
}

describe('frame details', () => {
  test('idlen request bytes, and heartbeats on their interval', async (t) => {
    const { c, s } = await setup(t, 'tcp', 'idlen', { heartbeatMs: 200 });
    void c.call(3001, { x: 1 }).catch(() => {});
    const f = await s.next();
    assert.equal(hex(f.wire), hex(unhex(`0000000f 01 000bb9 ${f.rid.toString(16).padStart(8, '0')} 7b2278223a317d`)));
    // Two heartbeats, each echoed; the connection stays up. (An interval of
    // 200 ms: a loaded machine's stall of two intervals would drop it.)
    for (let i = 0; i < 2; i++) {
      const hb = await s.next(2000);
      assert.equal(hex(hb.wire), '000000080100000000000000');
      s.send({ kind: 'heartbeat' });
    }
    assert.equal(c.state, 'open');
  });

  test('typelen and delimiter heartbeats', async (t) => {
    const a = await setup(t, 'tcp', 'typelen', { heartbeatMs: 30 });
    assert.equal(hex((await a.s.next(1000)).wire), '0000000c01050000' + '0000000000000000');
    const b = await setup(t, 'ws', 'delimiter', { heartbeatMs: 30 });
    const hb = await b.s.next(1000);
    assert.equal(hb.wire.toString(), '{"type":"heartbeat"}');
    assert.equal(hb.text, true);
  });

  test('a gateway that answers no heartbeat is taken as gone', async (t) => {
    const { c } = await setup(t, 'tcp', 'idlen', { heartbeatMs: 30 });
    const err = await c.closed;
    assert.ok(err instanceof ClosedError);
    assert.ok(err.cause instanceof TimeoutError, String(err.cause));
  });

  test('delimiter: routes by name, pushes by name', async (t) => {
    const { c, s } = await setup(t, 'tcp', 'delimiter');
    const p = c.call('login', { user: 'bob' });
    const f = await s.next();
    assert.equal(f.wire.toString(), `{"type":"request","route":"login","request_id":${f.rid},"payload":{"user":"bob"}}\n`);
    s.sendRaw(`{"type":"response","route":"login","route_id":1001,"request_id":${f.rid},"payload":{"ok":1}}\n`);
    assert.deepEqual(await p, { ok: 1 });
    const got: unknown[] = [];
    c.onPush('position', (b, info) => got.push([info.route, info.routeId, b]));
    s.send({ kind: 'push', route: 2101, name: 'position', body: '{"x":1}' });
    await until(() => got.length === 1);
    assert.deepEqual(got, [['position', 2101, { x: 1 }]]);
  });

  test('raw bodies: bytes out as they are, bytes in', async (t) => {
    const { c, s } = await setup(t, 'tcp', 'idlen', { body: 'raw' });
    const p = c.call(7, Uint8Array.of(0, 1, 0xff));
    const f = await s.next();
    assert.equal(hex(f.wire.subarray(12)), '0001ff');
    s.sendRaw(streamFrame('idlen', idlenMessage(7, f.rid, Buffer.from([9, 8]))));
    const body = await p;
    assert.ok(body instanceof Uint8Array);
    assert.equal(hex(body as Uint8Array), '0908');
    const got: Uint8Array[] = [];
    c.onPush(8, (b: Uint8Array) => got.push(b));
    s.sendRaw(streamFrame('idlen', idlenMessage(8, 0, Buffer.from([1]))));
    await until(() => got.length === 1);
    assert.equal(hex(got[0]!), '01');
  });

  test('json bodies: empty is undefined, non-JSON is the string; raw per call', async (t) => {
    const { c, s } = await setup(t, 'tcp', 'idlen');
    const p1 = c.call(7);
    const f1 = await s.next();
    assert.equal(f1.body, '');
    s.send({ kind: 'response', route: 7, rid: f1.rid });
    assert.equal(await p1, undefined);
    const p2 = c.call(7, null);
    const f2 = await s.next();
    assert.equal(f2.body, 'null');
    s.send({ kind: 'response', route: 7, rid: f2.rid, body: 'plain text' });
    assert.equal(await p2, 'plain text');
    const p3 = c.call(7, 'x', { raw: true });
    const f3 = await s.next();
    s.send({ kind: 'response', route: 7, rid: f3.rid, body: '{"a":1}' });
    assert.equal(Buffer.from((await p3) as Uint8Array).toString(), '{"a":1}');
  });

  test('status frames: known ones reach onStatus, unknown ones are ignored', async (t) => {
    const { c, s } = await setup(t, 'tcp', 'typelen');
    const got: StatusFrame[] = [];
    c.onStatus((f) => got.push(f));
    const notices: string[] = [];
    c.onNotice((code) => notices.push(code));
    s.send(
      { kind: 'notice', fields: { code: 'gateway.drain_started', grace_ms: 10000 } },
      { kind: 'notice', fields: { code: 'gateway.something_new', x: 1 } },
      { kind: 'notice', fields: { code: 'session.resume_token', token: 'tok-1' } },
    );
    await until(() => got.length === 2);
    assert.deepEqual(got, [
      { code: 'gateway.drain_started', grace_ms: 10000 },
      { code: 'session.resume_token', token: 'tok-1' },
    ]);
    assert.deepEqual(notices, []);
    assert.equal(c.resumeToken, 'tok-1');
    assert.equal(c.state, 'open');
  });

  test('call timeout, then the late answer is ignored', async (t) => {
    const { c, s } = await setup(t, 'tcp', 'idlen');
    const p = c.call(7, {}, { timeout: 30 });
    const f = await s.next();
    await assert.rejects(p, TimeoutError);
    s.send({ kind: 'response', route: 7, rid: f.rid, body: '1' });
    const p2 = c.call(7, {});
    const f2 = await s.next();
    assert.notEqual(f2.rid, f.rid);
    s.send({ kind: 'response', route: 7, rid: f2.rid, body: '2' });
    assert.equal(await p2, 2);
    assert.equal(c.pendingCalls, 0);
  });

  test('the default call timeout applies', async (t) => {
    const { c } = await setup(t, 'tcp', 'idlen', { callTimeoutMs: 20 });
    await assert.rejects(c.call(7, {}), TimeoutError);
  });

  test('abort: before sending and while waiting', async (t) => {
    const { c, s } = await setup(t, 'tcp', 'idlen');
    const pre = new AbortController();
    pre.abort('why');
    await assert.rejects(c.call(7, {}, { signal: pre.signal }), (e: unknown) => e instanceof AbortError && e.cause === 'why');
    const ac = new AbortController();
    const p = c.call(7, {}, { signal: ac.signal });
    await s.next();
    ac.abort();
    await assert.rejects(p, (e: unknown) => e instanceof AbortError && e.name === 'AbortError');
    assert.equal(c.pendingCalls, 0);
  });

  test('a frame above maxFrameBytes is not sent', async (t) => {
    const { c, s } = await setup(t, 'tcp', 'idlen', { maxFrameBytes: 64 });
    await assert.rejects(c.call(7, 'x'.repeat(100)), RangeError);
    assert.ok(await s.silent(50));
  });

  test('a handler that throws goes to onError and the client goes on', async (t) => {
    const errors: unknown[] = [];
    const { c, s } = await setup(t, 'tcp', 'idlen', { onError: (e) => errors.push(e) });
    const got: unknown[] = [];
    c.onPush(1, () => {
      throw new Error('app bug');
    });
    c.onPush(1, (b) => got.push(b));
    s.send({ kind: 'push', route: 1, body: '1' }, { kind: 'push', route: 1, body: '2' });
    await until(() => got.length === 2);
    assert.equal(errors.length, 2);
    assert.equal((errors[0] as Error).message, 'app bug');
    assert.equal(c.state, 'open');
  });

  test('the app closing: pending calls reject, close handlers get undefined, nothing reconnects', async (t) => {
    const gw = await FakeGateway.start('tcp', 'idlen');
    t.after(() => gw.close());
    const c = await connect({ url: gw.url, heartbeatMs: 0, reconnect: { baseMs: 1 } });
    const s = await gw.accept();
    const closes: unknown[] = [];
    c.onClose((e) => closes.push(e));
    const p = c.call(7, {});
    await s.next();
    const rejected = assert.rejects(p, ClosedError);
    await c.close();
    await rejected;
    assert.deepEqual(closes, [undefined]);
    await s.closed;
    assert.ok(await gw.noConnection(100));
  });

  test('connect errors: refused, upgrade refused, timeout, abort', async () => {
    const gw = await FakeGateway.start('tcp', 'idlen');
    const port = gw.port;
    await gw.close();
    await assert.rejects(connect({ url: `tcp://127.0.0.1:${port}` }), (e: any) => e.code === 'ECONNREFUSED');

    const ws = await FakeGateway.start('ws', 'idlen');
    ws.upgradeStatus = 403;
    await assert.rejects(connect({ url: ws.url }), (e: any) => e.name === 'UpgradeError' && e.status === 403);
    await ws.close();

    // A listener that never answers the upgrade.
    const silent = await FakeGateway.start('tcp', 'idlen');
    await assert.rejects(connect({ url: `ws://127.0.0.1:${silent.port}/ws`, connectTimeoutMs: 50 }), TimeoutError);
    const ac = new AbortController();
    const p = connect({ url: `ws://127.0.0.1:${silent.port}/ws`, signal: ac.signal });
    ac.abort();
    await assert.rejects(p, AbortError);
    await silent.close();

    await assert.rejects(connect({ url: 'http://x' }), TypeError);
  });
});

describe('websocket details', () => {
  test('the Origin header is sent when asked, and the upgrade is RFC 6455', async (t) => {
    const { s } = await setup(t, 'ws', 'idlen', { origin: 'http://127.0.0.1:9100' });
    assert.equal(s.headers['origin'], 'http://127.0.0.1:9100');
    assert.equal(s.headers['upgrade'], 'websocket');
    assert.equal(s.headers['sec-websocket-version'], '13');
    assert.equal(Buffer.from(s.headers['sec-websocket-key']!, 'base64').length, 16);
  });

  test('frames are masked; a fragmented message is reassembled; a ping gets its pong', async (t) => {
    const { c, s } = await setup(t, 'ws', 'delimiter');
    const p = c.call(1, { a: 'b'.repeat(300) });
    const f = await s.next();
    assert.equal(s.violation, undefined);
    s.ping('are you there');
    s.sendMessage(`{"type":"response","route_id":1,"request_id":${f.rid},"payload":{"long":"${'z'.repeat(200)}"}}`, 5);
    assert.deepEqual(await p, { long: 'z'.repeat(200) });
    await until(() => s.pongs.length === 1);
    assert.equal(s.pongs[0]!.toString(), 'are you there');
  });

  test('a large binary message (64-bit length) within the limit', async (t) => {
    const { c, s } = await setup(t, 'ws', 'idlen', { maxFrameBytes: 200_000 });
    const p = c.call(1);
    const f = await s.next();
    s.sendMessage(idlenMessage(1, f.rid, `"${'q'.repeat(70_000)}"`));
    assert.equal(((await p) as string).length, 70_000);
  });

  test('a control frame between the fragments of a message', async (t) => {
    const { c, s } = await setup(t, 'ws', 'idlen');
    const p = c.call(1);
    const f = await s.next();
    const msg = idlenMessage(1, f.rid, '{"split":true}');
    s.sendWsFrame(wsFrame(2, msg.subarray(0, 5), false));
    s.ping('mid');
    s.sendWsFrame(wsFrame(0, msg.subarray(5, 9), false));
    s.sendWsFrame(wsFrame(0, msg.subarray(9), true));
    assert.deepEqual(await p, { split: true });
    await until(() => s.pongs.length === 1);
    assert.equal(s.pongs[0]!.toString(), 'mid');
  });

  test('the app closing sends a close frame', async (t) => {
    const { c, s } = await setup(t, 'ws', 'idlen');
    await c.close();
    assert.equal(s.clientClose, 1000);
  });

  test('a close frame from the gateway ends the connection', async (t) => {
    const { c, s } = await setup(t, 'ws', 'idlen');
    const p = c.call(1);
    await s.next();
    s.end(1001);
    await assert.rejects(p, (e: unknown) => e instanceof ClosedError && /1001/.test(String((e.cause as Error)?.message)));
  });
});

/** A self-signed certificate for 127.0.0.1, made with openssl; undefined without it. */
function selfSigned(): { key: string; cert: string } | undefined {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'shield-ts-tls-'));
  try {
    const r = spawnSync(
      'openssl',
      ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '1', '-subj', '/CN=127.0.0.1',
        '-addext', 'subjectAltName=IP:127.0.0.1', '-keyout', path.join(dir, 'key.pem'), '-out', path.join(dir, 'cert.pem')],
      { encoding: 'utf8' },
    );
    if (r.status !== 0) return undefined;
    return { key: readFileSync(path.join(dir, 'key.pem'), 'utf8'), cert: readFileSync(path.join(dir, 'cert.pem'), 'utf8') };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('TLS', () => {
  const pair = selfSigned();
  for (const transport of ['tcp', 'ws'] as const) {
    test(`${transport} over TLS, verified against the gateway's CA`, { skip: pair ? false : 'no openssl to make a certificate' }, async (t) => {
      const gw = await FakeGateway.start(transport, 'idlen', pair!);
      assert.match(gw.url, transport === 'tcp' ? /^tls:/ : /^wss:/);
      t.after(() => gw.close());
      await assert.rejects(connect({ url: gw.url, reconnect: false }), (e: any) => /self[- ]signed/i.test(String(e.message ?? e.code)));
      const c = await connect({ url: gw.url, heartbeatMs: 0, reconnect: false, tls: { ca: pair!.cert } });
      t.after(() => c.close());
      const s = await gw.accept();
      const p = c.call(1001, { user: 'tls' });
      const f = await s.next();
      s.send({ kind: 'response', route: 1001, rid: f.rid, body: '{"ok":true}' });
      assert.deepEqual(await p, { ok: true });
    });
  }
});

describe('malformed frames close the connection and reach the close handler', () => {
  const cases: [string, Transport, Env, (s: ServerConn) => void, string][] = [
    ['idlen bad version', 'tcp', 'idlen', (s) => s.sendRaw(streamFrame('idlen', unhex('02 000001 00000000'))), 'bad_version'],
    ['idlen length above max', 'tcp', 'idlen', (s) => s.sendRaw(unhex('7fffffff 01')), 'too_large'],
    ['idlen length below the header', 'tcp', 'idlen', (s) => s.sendRaw(unhex('00000003 010000')), 'too_short'],
    ['idlen status body not JSON', 'tcp', 'idlen', (s) => s.sendRaw(streamFrame('idlen', idlenMessage(0, 0, '{oops'))), 'bad_system_frame'],
    [
      'resume_token status without a token',
      'tcp',
      'idlen',
      (s) => s.sendRaw(streamFrame('idlen', idlenMessage(0, 0, '{"code":"session.resume_token"}'))),
      'bad_system_frame',
    ],
    ['typelen type 9', 'tcp', 'typelen', (s) => s.sendRaw(streamFrame('typelen', typelenMessage(9, 0, 0))), 'bad_type'],
    ['delimiter bad wrapper', 'tcp', 'delimiter', (s) => s.sendRaw('not json\n'), 'bad_wrapper'],
    ['delimiter line above max', 'tcp', 'delimiter', (s) => s.sendRaw('x'.repeat(70_000)), 'too_large'],
    ['ws idlen as a text message', 'ws', 'idlen', (s) => s.sendMessage('hello'), 'bad_type'],
    ['ws delimiter as a binary message', 'ws', 'delimiter', (s) => s.sendMessage(Buffer.from('{"type":"heartbeat"}')), 'bad_type'],
    ['ws message above max', 'ws', 'idlen', (s) => s.sendWsFrame(wsFrame(2, Buffer.alloc(70_000), true).subarray(0, 20)), 'too_large'],
    ['ws masked frame from the server', 'ws', 'idlen', (s) => s.sendWsFrame(unhex('8280 00000000 0000')), 'websocket'],
    ['ws reserved bits', 'ws', 'idlen', (s) => s.sendWsFrame(unhex('c200')), 'websocket'],
    ['ws text not UTF-8', 'ws', 'delimiter', (s) => s.sendWsFrame(unhex('8102 c328')), 'websocket'],
  ];
  for (const [name, transport, env, send, reason] of cases) {
    test(name, async (t) => {
      const { gw, c, s } = await setup(t, transport, env, { reconnect: { baseMs: 1 } });
      const closes: unknown[] = [];
      c.onClose((e) => closes.push(e));
      const p = c.call(1, {});
      await s.next();
      send(s);
      await assert.rejects(p, (e: unknown) => e instanceof ClosedError && e.cause instanceof ProtocolError && e.cause.reason === reason);
      assert.equal(closes.length, 1);
      assert.ok(closes[0] instanceof ProtocolError);
      assert.equal((closes[0] as ProtocolError).reason, reason);
      assert.equal(c.state, 'closed');
      // Not a drop: no reconnect.
      assert.ok(await gw.noConnection(60));
      await s.closed;
    });
  }
});
