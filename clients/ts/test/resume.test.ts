// Reconnect with resume (SPEC §4) against the fake gateway.
import assert from 'node:assert/strict';
import { describe, test, type TestContext } from 'node:test';
import { backoffDelay, ClosedError, connect, type Client, type NodeConnectOptions, type ReconnectInfo } from '@shieldrpc/client/node';
import { FakeGateway, hex, unhex, until, type Env, type ServerConn, type Transport } from './helpers/fake-gateway.js';

const fast = { baseMs: 5, maxMs: 20, attempts: 5 };

async function setup(t: TestContext, transport: Transport, env: Env, opts: Omit<NodeConnectOptions, 'url'> = {}) {
  const gw = await FakeGateway.start(transport, env);
  let c: Client | undefined;
  // Registered before the connect, so a failed connect or accept cannot leave the run hanging.
  t.after(async () => {
    await c?.close();
    await gw.close();
  });
  c = await connect({ url: gw.url, envelope: env, heartbeatMs: 0, reconnect: fast, ...opts });
  const s = await gw.accept();
  return { gw, c, s };
}

/** Logs in on s: the answer comes after a resume_token status, as the gateway sends them after a bind. */
async function login(c: Client, s: ServerConn, token: string): Promise<void> {
  const p = c.call(1001, { user: 'alice' });
  const f = await s.next();
  s.send({ kind: 'notice', fields: { code: 'session.resume_token', token } }, { kind: 'response', route: 1001, rid: f.rid, body: '{"player_id":"alice"}' });
  assert.deepEqual(await p, { player_id: 'alice' });
  assert.equal(c.resumeToken, token);
}

/** The resume frame's exact bytes (TCP) or message (ws) for a token. */
function resumeWire(transport: Transport, env: Env, token: string): string {
  const body = Buffer.from(`{"resume":"${token}"}`);
  const len = (n: number) => n.toString(16).padStart(8, '0');
  const stream = transport === 'tcp';
  switch (env) {
    case 'idlen':
      return (stream ? len(8 + body.length) : '') + '01000000' + '00000000' + hex(body);
    case 'typelen':
      return (stream ? len(12 + body.length) : '') + '0105' + '0000' + '0000000000000000' + hex(body);
    case 'lenprefix': {
      const w = Buffer.from(`{"type":"heartbeat","payload":{"resume":"${token}"}}`);
      return (stream ? len(w.length) : '') + hex(w);
    }
    case 'delimiter':
      return hex(Buffer.from(`{"type":"heartbeat","payload":{"resume":"${token}"}}` + (stream ? '\n' : '')));
  }
}

describe('resume', () => {
  test('a drop: pending call rejected, reconnect, resume frame first, session.resumed, queued pushes in order', async (t) => {
    const { gw, c, s } = await setup(t, 'tcp', 'idlen');
    await login(c, s, 'tok-1');
    const events: string[] = [];
    c.onDisconnect((d) => events.push(`disconnect reconnecting=${d.reconnecting}`));
    c.onReconnect((r) => events.push(`reconnect resumed=${r.resumed} attempt=${r.attempt}`));
    c.onStatus((st) => events.push(`status ${st.code}`));
    c.onPush(2101, (b: { n: number }) => events.push(`push ${b.n}`));

    const pending = c.call(2001, { x: 1 });
    const req = await s.next();
    assert.equal(req.kind, 'request');
    s.destroy();
    await assert.rejects(pending, ClosedError);
    assert.notEqual(c.state, 'open');
    await assert.rejects(c.call(2001, {}), ClosedError); // not while reconnecting

    const s2 = await gw.accept();
    const first = await s2.next();
    assert.equal(hex(first.wire), hex(unhex(resumeWire('tcp', 'idlen', 'tok-1'))));
    assert.equal(c.state, 'resuming');
    // The answer the old connection was owed, the resume status, and the
    // pushes queued while suspended, all in one write.
    s2.send(
      { kind: 'notice', fields: { code: 'session.resumed', token: 'tok-2' } },
      { kind: 'response', route: 2001, rid: req.rid, body: '{}' },
      { kind: 'push', route: 2101, body: '{"n":1}' },
      { kind: 'push', route: 2101, body: '{"n":2}' },
      { kind: 'push', route: 2101, body: '{"n":3}' },
    );
    await until(() => events.length === 6, 2000, 'the events');
    assert.deepEqual(events, [
      'disconnect reconnecting=true',
      'status session.resumed',
      'reconnect resumed=true attempt=1',
      'push 1',
      'push 2',
      'push 3',
    ]);
    assert.equal(c.state, 'open');
    assert.equal(c.resumeToken, 'tok-2');
    // The call that was pending is never sent again: the next frame is a new call.
    const p = c.call(2002, { room: 'lobby' });
    const next = await s2.next();
    assert.equal(next.route, 2002);
    assert.notEqual(next.rid, req.rid);
    s2.send({ kind: 'response', route: 2002, rid: next.rid, body: '{"room":"lobby"}' });
    assert.deepEqual(await p, { room: 'lobby' });
  });

  test('session.resume_failed: the app is told to log in again, and the connection goes on', async (t) => {
    const { gw, c, s } = await setup(t, 'tcp', 'idlen');
    await login(c, s, 'tok-1');
    const infos: ReconnectInfo[] = [];
    c.onReconnect((r) => infos.push(r));
    s.destroy();
    const s2 = await gw.accept();
    assert.equal(hex((await s2.next()).wire), hex(unhex(resumeWire('tcp', 'idlen', 'tok-1'))));
    s2.send({ kind: 'notice', fields: { code: 'session.resume_failed', message: 'unknown token' } });
    await until(() => infos.length === 1);
    assert.deepEqual(infos, [{ resumed: false, attempt: 1, message: 'unknown token' }]);
    assert.equal(c.resumeToken, undefined);
    assert.equal(c.state, 'open');
    await login(c, s2, 'tok-3');

    // A later drop without a token would reconnect without a resume: here
    // the new session has one again, so the next drop resumes with it.
    s2.destroy();
    const s3 = await gw.accept();
    assert.equal(hex((await s3.next()).wire), hex(unhex(resumeWire('tcp', 'idlen', 'tok-3'))));
  });

  test('a drop before any token: a new session, no resume frame', async (t) => {
    const { gw, c, s } = await setup(t, 'tcp', 'idlen');
    const infos: ReconnectInfo[] = [];
    c.onReconnect((r) => infos.push(r));
    s.destroy();
    const s2 = await gw.accept();
    await until(() => infos.length === 1);
    assert.deepEqual(infos, [{ resumed: false, attempt: 1 }]);
    assert.ok(await s2.silent(50), 'nothing is sent before the app logs in');
  });

  for (const [transport, env] of [
    ['tcp', 'typelen'],
    ['tcp', 'lenprefix'],
    ['tcp', 'delimiter'],
    ['ws', 'idlen'],
    ['ws', 'typelen'],
    ['ws', 'delimiter'],
  ] as [Transport, Env][]) {
    test(`${transport} ${env}: the resume frame, then resumed`, async (t) => {
      const { gw, c, s } = await setup(t, transport, env);
      await login(c, s, 'T0k_/+=');
      const infos: ReconnectInfo[] = [];
      c.onReconnect((r) => infos.push(r));
      const pushes: unknown[] = [];
      c.onPush(2101, (b) => pushes.push(b));
      s.destroy();
      const s2 = await gw.accept();
      const first = await s2.next();
      assert.equal(hex(first.wire), hex(unhex(resumeWire(transport, env, 'T0k_/+='))));
      if (transport === 'ws') assert.equal(first.text, env === 'delimiter');
      s2.send({ kind: 'notice', fields: { code: 'session.resumed', token: 'next' } }, { kind: 'push', route: 2101, body: '{"q":1}' });
      await until(() => pushes.length === 1);
      assert.deepEqual(infos, [{ resumed: true, attempt: 1 }]);
      assert.deepEqual(pushes, [{ q: 1 }]);
      assert.equal(c.resumeToken, 'next');
    });
  }

  test('a notice that ends the session: no reconnect', async (t) => {
    const { gw, c, s } = await setup(t, 'tcp', 'idlen');
    await login(c, s, 'tok-1');
    const notices: string[] = [];
    c.onNotice((code) => notices.push(code));
    s.send({ kind: 'notice', fields: { code: 'session.kicked', message: 'logged in elsewhere' } });
    s.end();
    const err = await c.closed;
    assert.deepEqual(notices, ['session.kicked']);
    assert.ok(err instanceof ClosedError);
    assert.equal(err.notice?.code, 'session.kicked');
    assert.ok(await gw.noConnection(60));
  });

  test('gateway.draining ends the session too', async (t) => {
    const { gw, c, s } = await setup(t, 'ws', 'delimiter');
    await login(c, s, 'tok-1');
    s.send({ kind: 'notice', fields: { code: 'gateway.draining', message: 'the gateway is shutting down' } });
    s.end();
    const err = (await c.closed) as ClosedError;
    assert.equal(err.notice?.code, 'gateway.draining');
    assert.ok(await gw.noConnection(60));
  });

  test('session.idle_timeout with a token: the session is suspended, so the client resumes', async (t) => {
    const { gw, c, s } = await setup(t, 'tcp', 'idlen');
    await login(c, s, 'tok-1');
    s.send({ kind: 'notice', fields: { code: 'session.idle_timeout', message: 'idle' } });
    s.end();
    const s2 = await gw.accept();
    assert.equal(hex((await s2.next()).wire), hex(unhex(resumeWire('tcp', 'idlen', 'tok-1'))));
  });

  test('session.idle_timeout without a token ends the session', async (t) => {
    const { gw, c, s } = await setup(t, 'tcp', 'idlen');
    s.send({ kind: 'notice', fields: { code: 'session.idle_timeout', message: 'idle' } });
    s.end();
    assert.equal(((await c.closed) as ClosedError).notice?.code, 'session.idle_timeout');
    assert.ok(await gw.noConnection(60));
  });

  test('no answer to the resume: the attempt fails and the next one resumes again', async (t) => {
    const { gw, c, s } = await setup(t, 'tcp', 'idlen', { connectTimeoutMs: 500 });
    await login(c, s, 'tok-1');
    s.destroy();
    const s2 = await gw.accept();
    assert.equal(hex((await s2.next()).wire), hex(unhex(resumeWire('tcp', 'idlen', 'tok-1'))));
    await s2.closed; // the client gave up on it
    const s3 = await gw.accept();
    assert.equal(hex((await s3.next()).wire), hex(unhex(resumeWire('tcp', 'idlen', 'tok-1'))));
    s3.send({ kind: 'notice', fields: { code: 'session.resumed', token: 'tok-2' } });
    await until(() => c.state === 'open');
  });

  test('attempts run out: the client closes with the last error', async (t) => {
    const gw = await FakeGateway.start('tcp', 'idlen');
    const c = await connect({ url: gw.url, heartbeatMs: 0, reconnect: { baseMs: 2, maxMs: 4, attempts: 3 } });
    t.after(() => c.close());
    await gw.accept();
    const closes: unknown[] = [];
    c.onClose((e) => closes.push(e));
    await gw.close(); // stops listening and drops the connection
    const err = await c.closed;
    assert.ok(err instanceof ClosedError);
    assert.match(err.message, /after 3 attempts/);
    assert.equal((err.cause as { code?: string }).code, 'ECONNREFUSED');
    assert.deepEqual(closes, [err]);
  });

  test('reconnect: false closes on a drop', async (t) => {
    const { gw, c, s } = await setup(t, 'tcp', 'idlen', { reconnect: false });
    await login(c, s, 'tok-1');
    const d: boolean[] = [];
    c.onDisconnect((x) => d.push(x.reconnecting));
    s.destroy();
    assert.ok((await c.closed) instanceof ClosedError);
    assert.deepEqual(d, [false]);
    assert.ok(await gw.noConnection(60));
  });

  test('close() while reconnecting stops it', async (t) => {
    const { gw, c, s } = await setup(t, 'tcp', 'idlen', { reconnect: { baseMs: 200 } });
    s.destroy();
    await until(() => c.state === 'reconnecting');
    await c.close();
    assert.equal(c.state, 'closed');
    assert.ok(await gw.noConnection(300));
  });

  test('backoff: exponential, capped, with jitter', () => {
    const r = { baseMs: 100, maxMs: 1000, attempts: 10, jitter: 0.5 };
    assert.deepEqual(
      [1, 2, 3, 4, 5, 6].map((n) => backoffDelay(n, r, () => 0)),
      [100, 200, 400, 800, 1000, 1000],
    );
    assert.deepEqual(
      [1, 2, 5].map((n) => backoffDelay(n, r, () => 1)),
      [50, 100, 500],
    );
    assert.equal(backoffDelay(2000, r, () => 0), 1000);
  });
});
