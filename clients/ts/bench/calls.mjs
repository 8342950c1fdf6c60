// Calls per second of one @shieldrpc/client connection: P calls in flight
// at a time on the echo route, for a fixed time after a warm-up.
//
//   node bench/calls.mjs URL P SECONDS     (after npm run build)
//   node bench/calls.mjs tcp://127.0.0.1:7400 16 5
import { connect } from '@shieldrpc/client/node';

const [url = 'tcp://127.0.0.1:7400', p = '1', secs = '5'] = process.argv.slice(2);
const P = Number(p), seconds = Number(secs);
const client = await connect({ url, heartbeatMs: 0, callTimeoutMs: 10_000, reconnect: false });
const body = { n: 1, text: 'hello' };

async function run(ms) {
  let calls = 0;
  const until = performance.now() + ms;
  await Promise.all(
    Array.from({ length: P }, async () => {
      while (performance.now() < until) {
        await client.call(1, body);
        calls++;
      }
    }),
  );
  return calls;
}

await run(1000); // warm-up: JIT, socket buffers
const start = performance.now();
const calls = await run(seconds * 1000);
const elapsed = (performance.now() - start) / 1000;
console.log(JSON.stringify({ client: 'ts', url, p: P, calls, seconds: +elapsed.toFixed(2), per_second: Math.round(calls / elapsed) }));
await client.close();
