// The example game through its generated stubs (routes.ts, written by
// `gateway gen -lang ts`), as docs/clients.md walks through it: connect,
// log in, join a room, move, draw pushes, and log in again after a
// reconnect that could not resume. Type-checked with --strict by
// `npm run check:stubs`; a page or a Node script can call play().
import { connect, ShieldError, type Client } from '@shieldrpc/client';
import * as game from './routes.js';

export async function play(url: string, user: string, room: string, draw: (who: string, x: number, y: number) => void): Promise<Client> {
  const client = await connect({ url, envelope: 'delimiter' });
  game.onPosition(client, (p) => draw(p.player_id, p.x, p.y));
  game.onLeft(client, (p) => console.log(`${p.player_id} left; ${p.members} remain`));

  const enter = async (): Promise<number> => {
    const me = await game.login(client, { user });
    const joined = await game.joinRoom(client, { room });
    console.log(`${me.player_id} in ${joined.room} with ${joined.members - 1} other player(s)`);
    return joined.members;
  };
  client.onReconnect(({ resumed }) => {
    if (!resumed) void enter(); // a new session: log in again
  });
  await enter();
  try {
    await game.move(client, { x: 3, y: 4 }, { timeout: 5000 });
  } catch (e) {
    if (e instanceof ShieldError) console.log(e.code, e.message);
    else throw e;
  }
  return client;
}
