// The example game in a browser: log in, join a room, move with the arrow
// keys, and draw every player's position as the room pushes it; players
// who leave the room leave the board.
//
// It plays through @shieldrpc/client (clients/ts), bundled into shield.js
// beside this file by `npm run build:demo`: the client speaks the ws
// listener's envelope (delimiter: one JSON wrapper per text message; idlen:
// binary messages), pairs calls with their answers, sends heartbeats, and
// reconnects after a network flap. Which listener, which envelope and the
// route table come from config.json, served beside this page by the
// gateway's admin server at /play/.
//
// Query parameters: user, room (fill the form and play at once), ws (a
// WebSocket URL instead of config.json's), auto=1 (a demo and test mode
// that presses arrow keys by itself and reports, in #result and as the
// promise window.shieldDone, the first other player it saw move; with
// expect=NAME, that player).

import { connect, ShieldError } from "./shield.js";

const params = new URLSearchParams(location.search);
const cell = 20;
const board = document.getElementById("board");
const cols = board.width / cell, rows = board.height / cell;
const ctx = board.getContext("2d");
const statusLine = document.getElementById("status");
const logBox = document.getElementById("log");

function log(msg) {
  logBox.textContent = (new Date().toISOString().slice(11, 23) + " " + msg + "\n" + logBox.textContent).slice(0, 4000);
}

// The result of auto mode: resolved when another player was seen moving.
let finish, fail;
window.shieldDone = new Promise((resolve, reject) => { finish = resolve; fail = reject; });

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

  // The room's size: what the gateway last said (join_room's answer, a
  // left push), or more when players the board shows moved in since.
  let members = 0, roomName = room;
  const showMembers = () => {
    const n = Math.max(members, players.size);
    statusLine.textContent = `${me} in ${roomName} with ${n - 1} other player(s): move with the arrow keys`;
  };

  let moves = 0;
  const others = new Set(); // players seen moving, after our join
  client.onPush(R.position, (p) => {
    const fresh = !players.has(p.player_id);
    players.set(p.player_id, { x: p.x, y: p.y });
    if (p.player_id !== me) others.add(p.player_id);
    draw();
    if (fresh) showMembers();
    const expect = params.get("expect");
    const seen = expect ? others.has(expect) : others.size > 0;
    if (seen && moves >= 2) {
      const other = expect || [...others][0];
      const result = { user: me, saw: other, at: players.get(other), moves };
      document.getElementById("result").textContent = JSON.stringify(result);
      finish(result);
    }
  });
  client.onPush(R.left, (p) => {
    players.delete(p.player_id);
    members = p.members;
    log(`${p.player_id} left ${roomName}`);
    draw();
    showMembers();
  });
  client.onNotice((code, message) => log(`notice ${code}: ${message}`));
  client.onDisconnect(({ error, reconnecting }) => {
    statusLine.textContent = reconnecting ? `connection lost (${error.message}); reconnecting...` : error.message;
  });
  client.onClose((err) => {
    statusLine.textContent = err ? err.message : "closed";
    if (err) fail(err);
  });

  const pos = { x: Math.floor(Math.random() * cols), y: Math.floor(Math.random() * rows) };
  const move = async () => {
    moves++;
    try {
      await client.call(R.move, pos);
    } catch (err) {
      log("move: " + (err instanceof ShieldError ? `${err.code}: ${err.message}` : err.message));
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
      showMembers();
      return;
    }
    log("reconnected as a new session: logging in again");
    enter().then(move, (err) => log("log in again: " + err.message));
  });
  await enter();

  const steps = { ArrowLeft: [-1, 0], ArrowRight: [1, 0], ArrowUp: [0, -1], ArrowDown: [0, 1] };
  window.addEventListener("keydown", (ev) => {
    const d = steps[ev.key];
    if (!d) return;
    ev.preventDefault();
    pos.x = Math.min(cols - 1, Math.max(0, pos.x + d[0]));
    pos.y = Math.min(rows - 1, Math.max(0, pos.y + d[1]));
    move();
  });
  await move(); // show ourselves where we start
  board.focus();

  if (params.get("auto") === "1") {
    // Walk a square, one arrow key every 200 ms, until the page closes.
    const path = ["ArrowRight", "ArrowRight", "ArrowDown", "ArrowDown", "ArrowLeft", "ArrowLeft", "ArrowUp", "ArrowUp"];
    let i = 0;
    setInterval(() => window.dispatchEvent(new KeyboardEvent("keydown", { key: path[i++ % path.length] })), 200);
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
