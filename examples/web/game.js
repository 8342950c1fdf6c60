// The example game in a browser: log in, join a room, move with the arrow
// keys, and draw every player's position as the room pushes it; players
// who leave the room leave the board. "Play arena" queues for a real-time
// match instead (configs/services/arena.lua): once matched, the page joins
// the arena room with the push's token and draws the room's synced state.
//
// It plays through @shieldrpc/client (clients/ts), bundled into shield.js
// beside this file by `npm run build:demo`: the client speaks the ws
// listener's envelope (delimiter: one JSON wrapper per text message; idlen:
// binary messages), pairs calls with their answers, sends heartbeats, and
// reconnects after a network flap; its Room keeps the arena's state. Which
// listener, which envelope and the route table come from config.json,
// served beside this page by the gateway's admin server at /play/.
//
// Query parameters: user, room (fill the form and play at once), ws (a
// WebSocket URL instead of config.json's), auto=1 (a demo and test mode
// that presses arrow keys by itself and reports, in #result and as the
// promise window.shieldDone, the first other player it saw move; with
// expect=NAME, that player), auto=arena (the same in the arena, once
// "Play arena" was pressed: it holds arrow keys and reports the first
// other player it saw move in the room's state).

import { connect, ShieldError, ROOM_ROUTES } from "./shield.js";

const params = new URLSearchParams(location.search);
const cell = 20;
const board = document.getElementById("board");
const cols = board.width / cell, rows = board.height / cell;
const ctx = board.getContext("2d");
const statusLine = document.getElementById("status");
const logBox = document.getElementById("log");
const arenaButton = document.getElementById("arena");
const leaveButton = document.getElementById("arena-leave");

function log(msg) {
  logBox.textContent = (new Date().toISOString().slice(11, 23) + " " + msg + "\n" + logBox.textContent).slice(0, 4000);
}

function errText(err) {
  return err instanceof ShieldError ? `${err.code}: ${err.message}` : err.message;
}

// The result of auto mode: resolved when another player was seen moving.
let finish, fail;
window.shieldDone = new Promise((resolve, reject) => { finish = resolve; fail = reject; });
function report(result) {
  document.getElementById("result").textContent = JSON.stringify(result);
  finish(result);
}

// The board: every player's last pushed position.
const players = new Map(); // player_id -> {x, y}
let me = null;

function colour(name) {
  let h = 0;
  for (const ch of name) h = (h * 31 + ch.codePointAt(0)) % 360;
  return `hsl(${h} 65% 45%)`;
}

function draw() {
  ctx.clearRect(0, 0, board.width, board.height);
  ctx.strokeStyle = "#eee";
  for (let x = 0; x <= cols; x++) { ctx.beginPath(); ctx.moveTo(x * cell, 0); ctx.lineTo(x * cell, board.height); ctx.stroke(); }
  for (let y = 0; y <= rows; y++) { ctx.beginPath(); ctx.moveTo(0, y * cell); ctx.lineTo(board.width, y * cell); ctx.stroke(); }
  ctx.font = "12px system-ui, sans-serif";
  for (const [name, p] of players) {
    ctx.fillStyle = colour(name);
    ctx.fillRect(p.x * cell + 2, p.y * cell + 2, cell - 4, cell - 4);
    ctx.fillText(name === me ? name + " (you)" : name, p.x * cell + cell, p.y * cell + cell - 6);
  }
}

// The arena: the room's state as the server last synced it, {size, star,
// players: {id: {x, y, score}}}; the page draws it and predicts nothing.
function drawArena(st) {
  const size = st.size || { w: board.width, h: board.height };
  const sx = board.width / size.w, sy = board.height / size.h;
  ctx.fillStyle = "#f3f6fb";
  ctx.fillRect(0, 0, board.width, board.height);
  if (st.star) {
    ctx.fillStyle = "#e6a800";
    ctx.beginPath();
    for (let i = 0; i < 10; i++) {
      const r = i % 2 ? 4 : 10, a = Math.PI / 5 * i - Math.PI / 2;
      ctx.lineTo(st.star.x * sx + r * Math.cos(a), st.star.y * sy + r * Math.sin(a));
    }
    ctx.fill();
  }
  const all = Object.entries(st.players || {}).sort(([a], [b]) => (a < b ? -1 : 1));
  ctx.font = "12px system-ui, sans-serif";
  all.forEach(([name, p], i) => {
    ctx.fillStyle = colour(name);
    ctx.beginPath();
    ctx.arc(p.x * sx, p.y * sy, 12, 0, 2 * Math.PI);
    ctx.fill();
    if (name === me) { ctx.strokeStyle = "#222"; ctx.lineWidth = 2; ctx.stroke(); ctx.lineWidth = 1; }
    const label = name === me ? name + " (you)" : name, w = ctx.measureText(label).width;
    const lx = p.x * sx + 14 + w > board.width ? p.x * sx - 14 - w : p.x * sx + 14; // inside the field
    ctx.fillText(label, lx, Math.max(12, p.y * sy - 10));
    ctx.fillText(`${name}: ${p.score ?? 0}`, 8, 16 + 14 * i); // the score board
  });
}

async function config() {
  const res = await fetch("config.json", { cache: "no-store" });
  if (!res.ok) throw new Error("config.json: HTTP " + res.status);
  const cfg = await res.json();
  if (params.get("ws")) cfg.url = params.get("ws");
  return cfg;
}

async function play(user, room) {
  const cfg = await config();
  const R = cfg.routes; // name -> id: idlen frames carry ids, and delimiter takes them too
  statusLine.textContent = `connecting to ${cfg.url} (${cfg.envelope})`;
  const client = await connect({ url: cfg.url, envelope: cfg.envelope, heartbeatMs: 20000 });
  window.shieldClient = client; // for the console
  // The Room takes every shield.room.state push from now on: made before
  // any join, so no SNAPSHOT is missed.
  const arena = client.room();

  // Where the session is: "lobby" (home: the player service), "queue" (a
  // ticket waits), "joining" and "arena" (its frames go to the arena room).
  let mode = "lobby";

  // The room's size: what the gateway last said (join_room's answer, a
  // left push), or more when players the board shows moved in since.
  let members = 0, roomName = room;
  const showMembers = () => {
    const n = Math.max(members, players.size);
    statusLine.textContent = `${me} in ${roomName} with ${n - 1} other player(s): move with the arrow keys`;
  };
  const showArena = () => {
    const st = arena.state || {};
    const n = Object.keys(st.players || {}).length;
    const score = st.players?.[me]?.score ?? 0;
    statusLine.textContent = `${me} in the arena with ${n - 1} other player(s): steer with the arrow keys or WASD, catch the star (score ${score})`;
  };
  const setMode = (m) => {
    mode = m;
    arenaButton.textContent = m === "queue" ? "Cancel" : "Play arena";
    arenaButton.hidden = m === "arena" || m === "joining";
    leaveButton.hidden = m !== "arena";
  };

  let moves = 0;
  const others = new Set(); // players seen moving, after our join
  client.onPush(R.position, (p) => {
    const fresh = !players.has(p.player_id);
    players.set(p.player_id, { x: p.x, y: p.y });
    if (p.player_id !== me) others.add(p.player_id);
    if (mode !== "lobby" && mode !== "queue") return; // the canvas shows the arena
    draw();
    if (fresh && mode === "lobby") showMembers();
    const expect = params.get("expect");
    const seen = expect ? others.has(expect) : others.size > 0;
    if (params.get("auto") !== "arena" && seen && moves >= 2) {
      const other = expect || [...others][0];
      report({ user: me, saw: other, at: players.get(other), moves });
    }
  });
  client.onPush(R.left, (p) => {
    players.delete(p.player_id);
    members = p.members;
    log(`${p.player_id} left ${roomName}`);
    if (mode !== "lobby" && mode !== "queue") return;
    draw();
    if (mode === "lobby") showMembers();
  });
  client.onNotice((code, message) => log(`notice ${code}: ${message}`));
  client.onDisconnect(({ error, reconnecting }) => {
    statusLine.textContent = reconnecting ? `connection lost (${error.message}); reconnecting...` : error.message;
  });
  client.onClose((err) => {
    statusLine.textContent = err ? err.message : "closed";
    arenaButton.disabled = true;
    if (err) fail(err);
  });

  // The arena: a matched push names the room and this player's token.
  const seenAt = new Map(); // player_id -> the arena position first seen
  const movedInArena = new Set();

  // Keys: in the lobby an arrow is one step; in the arena the keys held
  // are a direction, sent when it changes, at most once a tick (the room
  // keeps the last one until the next).
  const steps = { ArrowLeft: [-1, 0], ArrowRight: [1, 0], ArrowUp: [0, -1], ArrowDown: [0, 1], a: [-1, 0], d: [1, 0], w: [0, -1], s: [0, 1] };
  const held = new Set();
  let sent = { dx: 0, dy: 0 }, lastSend = 0, pending = null, sends = 0;
  const steer = () => {
    if (pending !== null) return; // a send is due: it takes the keys held then
    const wait = lastSend + 1000 / (arena.tickHz || 20) - performance.now();
    if (wait > 0) { pending = setTimeout(() => { pending = null; steer(); }, wait); return; }
    let dx = 0, dy = 0;
    for (const k of held) { dx += steps[k][0]; dy += steps[k][1]; }
    const want = { dx: Math.sign(dx), dy: Math.sign(dy) };
    if (mode !== "arena" || (want.dx === sent.dx && want.dy === sent.dy)) return;
    if (client.notify(R.arena_move, want)) {
      sent = want;
      lastSend = performance.now();
      sends++;
    }
  };
  client.onPush(ROOM_ROUTES.match, async (ev) => {
    if (ev.event === "expired") {
      if (mode === "queue") setMode("lobby");
      statusLine.textContent = "no one else came to play: press Play arena again";
      return;
    }
    if (ev.event !== "matched" || mode === "arena" || mode === "joining") return;
    setMode("joining");
    log(`matched with ${(ev.players || []).join(", ")} in ${ev.room}`);
    seenAt.clear();
    movedInArena.clear();
    try {
      await arena.join(ev.room, undefined, { token: ev.token });
    } catch (err) {
      log("arena join: " + errText(err));
      setMode("lobby");
      draw();
      showMembers();
      return;
    }
    if (!arena.inRoom) return; // it ended already: onEnd said why
    sent = { dx: 0, dy: 0 }; // the room starts every player still
    setMode("arena");
    drawArena(arena.state);
    showArena();
    board.focus();
  });
  arena.onPatch(() => {
    const st = arena.state;
    if (!st) return;
    for (const [pid, p] of Object.entries(st.players || {})) {
      const first = seenAt.get(pid);
      if (!first) seenAt.set(pid, { x: p.x, y: p.y });
      else if (first.x !== p.x || first.y !== p.y) movedInArena.add(pid);
    }
    if (mode !== "arena") return;
    drawArena(st);
    showArena();
    if (params.get("auto") === "arena" && movedInArena.has(me)) {
      const expect = params.get("expect");
      const other = expect ? (movedInArena.has(expect) ? expect : null) : [...movedInArena].find((p) => p !== me);
      if (other) report({ user: me, saw: other, at: st.players[other], moves: sends, arena: arena.roomId });
    }
  });
  arena.onEnd((end) => {
    held.clear();
    const why = end.message ? `${end.reason}: ${end.message}` : end.reason;
    log(`out of the arena (${why})`);
    setMode("lobby");
    players.clear(); // whoever is still in the lobby shows up with their next move
    draw();
    statusLine.textContent = `${me} is out of the arena (${why}), back in ${roomName}`;
  });

  arenaButton.onclick = async () => {
    arenaButton.disabled = true;
    try {
      if (mode === "lobby") {
        const { ticket } = await client.call(R.play, {});
        // The matched push may have come before this answer (they come
        // from different actors): then the page is joining already.
        if (mode === "lobby") {
          setMode("queue");
          statusLine.textContent = `waiting for players (${ticket}): 2 to 8 play together`;
        }
      } else if (mode === "queue") {
        const { cancelled } = await client.call(R.cancel_play, {});
        // Not cancelled: it was matched (the push is on its way) or expired.
        if (cancelled && mode === "queue") {
          setMode("lobby");
          showMembers();
        }
      }
    } catch (err) {
      log("play: " + errText(err));
    } finally {
      arenaButton.disabled = false;
    }
  };
  leaveButton.onclick = () => arena.leave().catch((err) => log("leave: " + errText(err)));

  const pos = { x: Math.floor(Math.random() * cols), y: Math.floor(Math.random() * rows) };
  const move = async () => {
    moves++;
    try {
      await client.call(R.move, pos);
    } catch (err) {
      log("move: " + errText(err));
    }
  };

  // Log in and join: at the start, and again after a reconnect that could
  // not resume the session (the gateway forgot it, or has no resume).
  const enter = async () => {
    const login = await client.call(R.login, { user });
    me = login.player_id;
    const joined = await client.call(R.join_room, { room });
    roomName = joined.room;
    members = joined.members;
    players.clear(); // whoever is still here shows up with their next move
    showMembers();
    log(`logged in as ${me}, joined ${joined.room}`);
  };
  client.onReconnect(({ resumed }) => {
    if (resumed) {
      log("reconnected: the session was resumed");
      if (mode === "arena") showArena(); else showMembers();
      return;
    }
    // A new session holds no ticket (the old one's was cancelled when it
    // closed) and is in no room (the Room said so with onEnd, just before).
    if (mode === "queue") setMode("lobby");
    log("reconnected as a new session: logging in again");
    enter().then(move, (err) => log("log in again: " + err.message));
  });
  await enter();

  const keyOf = (ev) => (ev.key.length === 1 ? ev.key.toLowerCase() : ev.key);
  window.addEventListener("keydown", (ev) => {
    const k = keyOf(ev), d = steps[k];
    if (!d || ev.target instanceof HTMLInputElement) return; // typing a name is not playing
    ev.preventDefault();
    if (mode === "arena") {
      held.add(k);
      steer();
      return;
    }
    if (mode !== "lobby" && mode !== "queue") return;
    pos.x = Math.min(cols - 1, Math.max(0, pos.x + d[0]));
    pos.y = Math.min(rows - 1, Math.max(0, pos.y + d[1]));
    move();
  });
  window.addEventListener("keyup", (ev) => {
    if (held.delete(keyOf(ev))) steer();
  });
  window.addEventListener("blur", () => { held.clear(); steer(); }); // a key released elsewhere
  await move(); // show ourselves where we start
  board.focus();
  arenaButton.disabled = false; // last: focusing may scroll the page

  if (params.get("auto") === "1") {
    // Walk a square, one arrow key every 200 ms, until the page closes.
    const path = ["ArrowRight", "ArrowRight", "ArrowDown", "ArrowDown", "ArrowLeft", "ArrowLeft", "ArrowUp", "ArrowUp"];
    let i = 0;
    setInterval(() => window.dispatchEvent(new KeyboardEvent("keydown", { key: path[i++ % path.length] })), 200);
  } else if (params.get("auto") === "arena") {
    // In the arena, hold each arrow key of a square for 400 ms in turn.
    const path = ["ArrowRight", "ArrowDown", "ArrowLeft", "ArrowUp"];
    let i = 0;
    setInterval(() => {
      if (mode !== "arena") return;
      window.dispatchEvent(new KeyboardEvent("keyup", { key: path[(i + path.length - 1) % path.length] }));
      window.dispatchEvent(new KeyboardEvent("keydown", { key: path[i++ % path.length] }));
    }, 400);
  }
}

const form = document.getElementById("join");
form.user.value = params.get("user") || "guest-" + Math.floor(Math.random() * 10000);
form.room.value = params.get("room") || "lobby";
form.addEventListener("submit", (ev) => {
  ev.preventDefault();
  form.querySelector("button").disabled = true;
  play(form.user.value, form.room.value).catch((err) => {
    statusLine.textContent = err.message;
    fail(err);
  });
});
draw();
if (params.get("user")) form.requestSubmit();
