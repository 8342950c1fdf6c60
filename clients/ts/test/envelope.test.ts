// Envelope encoding and decoding, byte for byte against SPEC §3's layouts.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { decodeMessage, encodeMessage, encodeStreamFrame, ProtocolError, StreamDecoder, type InFrame } from '@shieldrpc/client';
import { hex, idlenMessage, serverMessage, streamFrame, typelenMessage, unhex, type Env } from './helpers/fake-gateway.js';

const text = (s: string) => Buffer.from(s).toString('hex');

describe('encoding what a client sends', () => {
  const cases: [string, Env, Parameters<typeof encodeStreamFrame>[1], string][] = [
    ['idlen heartbeat', 'idlen', { kind: 'heartbeat' }, '00000008 01 000000 00000000'],
    ['idlen request', 'idlen', { kind: 'request', route: 3001, requestId: 5, body: { json: { x: 1 } } }, '0000000f 01 000bb9 00000005' + text('{"x":1}')],
    ['idlen request, largest ids', 'idlen', { kind: 'request', route: 0xffffff, requestId: 0xffffffff }, '00000008 01 ffffff ffffffff'],
    ['idlen notify, raw body', 'idlen', { kind: 'notify', route: 0xfffffe, body: Buffer.from('ab') }, '0000000a 01 fffffe 00000000 6162'],
    [
      'idlen resume',
      'idlen',
      { kind: 'heartbeat', resume: 'tok' },
      '00000018 01 000000 00000000' + text('{"resume":"tok"}'),
    ],
    ['typelen heartbeat', 'typelen', { kind: 'heartbeat' }, '0000000c 01 05 0000 0000000000000000'],
    ['typelen request', 'typelen', { kind: 'request', route: 0xffff, requestId: 2 ** 40, body: Buffer.from('x') }, '0000000d 01 01 ffff 0000010000000000 78'],
    ['typelen request, largest safe id', 'typelen', { kind: 'request', route: 1, requestId: Number.MAX_SAFE_INTEGER }, '0000000c 01 01 0001 001fffffffffffff'],
    ['typelen notify', 'typelen', { kind: 'notify', route: 3001 }, '0000000c 01 07 0bb9 0000000000000000'],
    ['typelen resume', 'typelen', { kind: 'heartbeat', resume: 'tok' }, '0000001c 01 05 0000 0000000000000000' + text('{"resume":"tok"}')],
    ['lenprefix heartbeat', 'lenprefix', { kind: 'heartbeat' }, '00000014' + text('{"type":"heartbeat"}')],
    [
      'lenprefix request',
      'lenprefix',
      { kind: 'request', route: 3001, requestId: 5, body: { json: { x: 1 } } },
      '00000043' + text('{"type":"request","route_id":3001,"request_id":5,"payload":{"x":1}}'),
    ],
    ['delimiter heartbeat', 'delimiter', { kind: 'heartbeat' }, text('{"type":"heartbeat"}\n')],
    [
      'delimiter request by name',
      'delimiter',
      { kind: 'request', route: 'move', requestId: 5, body: { json: { x: 1 } } },
      text('{"type":"request","route":"move","request_id":5,"payload":{"x":1}}\n'),
    ],
    [
      'delimiter notify, bytes of JSON with newlines',
      'delimiter',
      { kind: 'notify', route: 7, body: Buffer.from('{\n "a": [1,\n2]\n}') },
      text('{"type":"notify","route_id":7,"payload":{ "a": [1,2]}}\n'),
    ],
    ['delimiter notify, no body', 'delimiter', { kind: 'notify', route: 7 }, text('{"type":"notify","route_id":7}\n')],
    [
      'delimiter resume',
      'delimiter',
      { kind: 'heartbeat', resume: 'a"b' },
      text('{"type":"heartbeat","payload":{"resume":"a\\"b"}}\n'),
    ],
    // docs/protocol.md "Deadlines": the frame before a request on the
    // header envelopes, the request's own deadline_ms on the legacy ones.
    ['idlen deadline', 'idlen', { kind: 'deadline', requestId: 5, deadlineMs: 2500 }, '0000001c 01 000000 00000005' + text('{"deadline_ms":2500}')],
    ['typelen deadline', 'typelen', { kind: 'deadline', requestId: 5, deadlineMs: 2500 }, '00000020 01 08 0000 0000000000000005' + text('{"deadline_ms":2500}')],
    [
      'delimiter request with a deadline',
      'delimiter',
      { kind: 'request', route: 3, requestId: 5, deadlineMs: 2500, body: { json: {} } },
      text('{"type":"request","route_id":3,"request_id":5,"deadline_ms":2500,"payload":{}}\n'),
    ],
  ];
  for (const [name, env, frame, wire] of cases) {
    test(name, () => {
      assert.equal(hex(encodeStreamFrame(env, frame)), hex(unhex(wire)));
    });
  }

  test('a message is the stream frame without its framing', () => {
    assert.equal(hex(encodeMessage('idlen', { kind: 'heartbeat' }) as Uint8Array), '0100000000000000');
    assert.equal(encodeMessage('delimiter', { kind: 'heartbeat', resume: 't' }), '{"type":"heartbeat","payload":{"resume":"t"}}');
  });

  test('refuses frames the gateway would close the connection for', () => {
    assert.throws(() => encodeMessage('idlen', { kind: 'request', route: 0, requestId: 1 }), RangeError);
    assert.throws(() => encodeMessage('idlen', { kind: 'request', route: 1 << 24, requestId: 1 }), RangeError);
    assert.throws(() => encodeMessage('idlen', { kind: 'request', route: 1, requestId: 2 ** 32 }), RangeError);
    assert.throws(() => encodeMessage('typelen', { kind: 'notify', route: 0x10000 }), RangeError);
    assert.throws(() => encodeMessage('idlen', { kind: 'request', route: 'move', requestId: 1 }), TypeError);
    assert.throws(() => encodeMessage('delimiter', { kind: 'notify', route: 1, body: Buffer.from('not json') }), TypeError);
    assert.throws(() => encodeMessage('idlen', { kind: 'notify', route: 1, body: { json: () => 1 } }), TypeError);
    assert.throws(() => encodeMessage('idlen', { kind: 'deadline', requestId: 1, deadlineMs: 0 }), RangeError);
    assert.throws(() => encodeMessage('typelen', { kind: 'deadline', requestId: 0, deadlineMs: 5 }), RangeError);
    assert.throws(() => encodeMessage('idlen', { kind: 'deadline', requestId: 1, deadlineMs: 1.5 }), RangeError);
    assert.throws(() => encodeMessage('delimiter', { kind: 'deadline', requestId: 1, deadlineMs: 5 }), TypeError);
  });
});

describe('decoding what a gateway sends', () => {
  const frames: [string, Env, Buffer | string, InFrame][] = [
    ['idlen response', 'idlen', unhex('01 0003e9 ffffffff 7b7d'), { kind: 'response', routeId: 1001, requestId: 0xffffffff, body: { bytes: Buffer.from('{}') } }],
    ['idlen push', 'idlen', unhex('01 0007d1 00000000 31'), { kind: 'push', routeId: 2001, body: { bytes: Buffer.from('1') } }],
    ['idlen empty response', 'idlen', unhex('01 0007d1 00000003'), { kind: 'response', routeId: 2001, requestId: 3, body: undefined }],
    [
      'idlen error',
      'idlen',
      idlenMessage(0, 7, '{"code":"client_rpc.busy","message":"m"}'),
      { kind: 'error', routeId: 0, requestId: 7, code: 'client_rpc.busy', message: 'm', retryAfterMs: 0 },
    ],
    [
      'idlen error with retry_after_ms',
      'idlen',
      idlenMessage(0, 9, '{"code":"client_rpc.draining","message":"d","retry_after_ms":1500}'),
      { kind: 'error', routeId: 0, requestId: 9, code: 'client_rpc.draining', message: 'd', retryAfterMs: 1500 },
    ],
    [
      'idlen notice',
      'idlen',
      idlenMessage(0, 0, '{"code":"session.kicked","message":"a\\"<b>"}'),
      { kind: 'notice', code: 'session.kicked', message: 'a"<b>', fields: { code: 'session.kicked', message: 'a"<b>' } },
    ],
    [
      'idlen status',
      'idlen',
      idlenMessage(0, 0, '{"code":"session.resume_token","token":"t"}'),
      { kind: 'notice', code: 'session.resume_token', message: '', fields: { code: 'session.resume_token', token: 't' } },
    ],
    ['idlen heartbeat echo', 'idlen', unhex('01 000000 00000000'), { kind: 'heartbeat' }],
    [
      'typelen error keeps route_id',
      'typelen',
      typelenMessage(3, 3001, 5, '{"code":"a.b","message":""}'),
      { kind: 'error', routeId: 3001, requestId: 5, code: 'a.b', message: '', retryAfterMs: 0 },
    ],
    ['typelen push', 'typelen', unhex('01 04 07d1 0000000000000000 7b7d'), { kind: 'push', routeId: 2001, body: { bytes: Buffer.from('{}') } }],
    ['typelen response, 2^40', 'typelen', unhex('01 02 0001 0000010000000000'), { kind: 'response', routeId: 1, requestId: 2 ** 40, body: undefined }],
    ['typelen heartbeat', 'typelen', typelenMessage(5, 0, 0), { kind: 'heartbeat' }],
    [
      'typelen notice',
      'typelen',
      typelenMessage(6, 0, 0, '{"code":"gateway.drain_started","grace_ms":10000}'),
      { kind: 'notice', code: 'gateway.drain_started', message: '', fields: { code: 'gateway.drain_started', grace_ms: 10000 } },
    ],
    [
      'lenprefix response',
      'lenprefix',
      Buffer.from('{"type":"response","route":"move","route_id":3001,"request_id":5,"payload":{"ok":true}}'),
      { kind: 'response', routeId: 3001, route: 'move', requestId: 5, body: { json: { ok: true } } },
    ],
    [
      'delimiter error',
      'delimiter',
      '{"type":"error","route":"move","route_id":3001,"request_id":5,"code":"client_rpc.busy","message":"full"}',
      { kind: 'error', routeId: 3001, route: 'move', requestId: 5, code: 'client_rpc.busy', message: 'full', retryAfterMs: 0 },
    ],
    [
      'delimiter error with retry_after_ms',
      'delimiter',
      '{"type":"error","route_id":3001,"request_id":5,"code":"client_rpc.busy","message":"full","retry_after_ms":100}',
      { kind: 'error', routeId: 3001, requestId: 5, code: 'client_rpc.busy', message: 'full', retryAfterMs: 100 },
    ],
    [
      'delimiter notice',
      'delimiter',
      '{"type":"notice","code":"gateway.draining","message":"bye"}',
      { kind: 'notice', code: 'gateway.draining', message: 'bye', fields: { code: 'gateway.draining', message: 'bye' } },
    ],
    ['delimiter push without a name', 'delimiter', '{"type":"push","route_id":2001,"payload":[1,2]}', { kind: 'push', routeId: 2001, body: { json: [1, 2] } }],
    ['delimiter push, null payload', 'delimiter', '{"type":"push","route_id":2001,"payload":null}', { kind: 'push', routeId: 2001, body: { json: null } }],
    ['delimiter heartbeat', 'delimiter', '{"type":"heartbeat"}', { kind: 'heartbeat' }],
  ];
  for (const [name, env, msg, want] of frames) {
    test(name, () => {
      const got = decodeMessage(env, msg, 65536);
      assert.deepEqual(normalize(got), normalize(want));
    });
  }

  const bad: [string, Env, Buffer | string, string][] = [
    ['idlen version 2', 'idlen', unhex('02 000001 00000001'), 'bad_version'],
    ['idlen too short', 'idlen', unhex('01 000001'), 'too_short'],
    ['idlen error body not JSON', 'idlen', idlenMessage(0, 7, 'nope'), 'bad_system_frame'],
    ['idlen notice body an array', 'idlen', idlenMessage(0, 0, '[1]'), 'bad_system_frame'],
    ['idlen notice code not a string', 'idlen', idlenMessage(0, 0, '{"code":5}'), 'bad_system_frame'],
    ['idlen error retry_after_ms negative', 'idlen', idlenMessage(0, 7, '{"code":"a.b","retry_after_ms":-1}'), 'bad_system_frame'],
    ['delimiter retry_after_ms a string', 'delimiter', '{"type":"error","request_id":1,"retry_after_ms":"1"}', 'bad_wrapper'],
    ['typelen request from the gateway', 'typelen', typelenMessage(1, 1, 1), 'bad_type'],
    ['typelen notify from the gateway', 'typelen', typelenMessage(7, 1, 0), 'bad_type'],
    ['typelen type 0', 'typelen', typelenMessage(0, 1, 0), 'bad_type'],
    ['typelen heartbeat with a body', 'typelen', typelenMessage(5, 0, 0, 'x'), 'bad_system_frame'],
    ['typelen version 0', 'typelen', unhex('00 02 0001 0000000000000001'), 'bad_version'],
    ['delimiter not an object', 'delimiter', '[1]', 'bad_wrapper'],
    ['delimiter not JSON', 'delimiter', '{"type":', 'bad_wrapper'],
    ['delimiter unknown type', 'delimiter', '{"type":"hello"}', 'bad_wrapper'],
    ['delimiter route_id a string', 'delimiter', '{"type":"push","route_id":"1"}', 'bad_wrapper'],
    ['delimiter request from the gateway', 'delimiter', '{"type":"request","route_id":1,"request_id":1}', 'bad_type'],
    ['delimiter no type, so a notify', 'delimiter', '{"route_id":1}', 'bad_type'],
    ['delimiter as binary', 'delimiter', Buffer.from('{"type":"heartbeat"}'), 'bad_type'],
    ['idlen as text', 'idlen', 'hello', 'bad_type'],
  ];
  for (const [name, env, msg, reason] of bad) {
    test(`malformed: ${name}`, () => {
      assert.throws(
        () => decodeMessage(env, msg, 65536),
        (e: unknown) => e instanceof ProtocolError && e.reason === reason,
      );
    });
  }

  test('a message above max_frame_bytes is too_large', () => {
    assert.throws(() => decodeMessage('idlen', idlenMessage(1, 0, 'xxx'), 10), (e: unknown) => e instanceof ProtocolError && e.reason === 'too_large');
    assert.throws(() => decodeMessage('delimiter', '{"type":"heartbeat"}', 10), (e: unknown) => e instanceof ProtocolError && e.reason === 'too_large');
  });
});

describe('StreamDecoder', () => {
  const stream = (env: Env) =>
    Buffer.concat([
      streamFrame(env, serverMessage(env, { kind: 'response', route: 2, rid: 9, body: '{"a":1}' })),
      streamFrame(env, serverMessage(env, { kind: 'push', route: 3, body: '"p"' })),
      streamFrame(env, serverMessage(env, { kind: 'heartbeat' })),
      streamFrame(env, serverMessage(env, { kind: 'notice', fields: { code: 'session.kicked', message: 'x' } })),
    ]);
  for (const env of ['idlen', 'typelen', 'lenprefix', 'delimiter'] as const) {
    test(`${env}: the same frames whole or byte by byte`, () => {
      const bytes = stream(env);
      const whole = new StreamDecoder(env, 65536).push(bytes);
      assert.deepEqual(
        whole.map((f) => f.kind),
        ['response', 'push', 'heartbeat', 'notice'],
      );
      const d = new StreamDecoder(env, 65536);
      const split: InFrame[] = [];
      for (const b of bytes) split.push(...d.push(Uint8Array.of(b)));
      assert.deepEqual(split.map(normalize), whole.map(normalize));
      assert.equal(d.buffered, 0);
      assert.equal(d.end(), undefined);
    });
  }

  test('a length above the limit fails before the body arrives', () => {
    const d = new StreamDecoder('idlen', 1024);
    assert.throws(() => d.push(unhex('00100000')), (e: unknown) => e instanceof ProtocolError && e.reason === 'too_large');
  });

  test('a length below the header is too_short', () => {
    assert.throws(() => new StreamDecoder('typelen', 1024).push(unhex('0000000b')), (e: unknown) => e instanceof ProtocolError && e.reason === 'too_short');
    assert.throws(() => new StreamDecoder('lenprefix', 1024).push(unhex('00000000')), (e: unknown) => e instanceof ProtocolError && e.reason === 'too_short');
  });

  test('a bad version fails on its byte, before the body', () => {
    assert.throws(() => new StreamDecoder('idlen', 1024).push(unhex('00000100 07')), (e: unknown) => e instanceof ProtocolError && e.reason === 'bad_version');
  });

  test('a delimiter line longer than the limit fails before its newline', () => {
    const d = new StreamDecoder('delimiter', 16);
    d.push(Buffer.from('{"type":'));
    assert.throws(() => d.push(Buffer.from('"heartbeat"')), (e: unknown) => e instanceof ProtocolError && e.reason === 'too_large');
  });

  test('a CRLF line is accepted', () => {
    assert.deepEqual(new StreamDecoder('delimiter', 64).push(Buffer.from('{"type":"heartbeat"}\r\n')), [{ kind: 'heartbeat' }]);
  });

  test('an end inside a frame is truncated', () => {
    const d = new StreamDecoder('idlen', 1024);
    d.push(unhex('0000000a 01 000001'));
    assert.equal(d.end()?.reason, 'truncated');
  });
});

/** Frames with Uint8Array bodies compared as hex. */
function normalize(f: InFrame): unknown {
  if ('body' in f && f.body && 'bytes' in f.body) return { ...f, body: { hex: hex(f.body.bytes) } };
  return f;
}
