// The example game in a browser: log in, join a room, move with the arrow
// keys, and draw every player's position as the room pushes it.
//
// It speaks to a Shield ws listener one frame per WebSocket message (SPEC §3,
// Transports): with the delimiter envelope a text message holding one JSON
// wrapper, routes named by "route"; with idlen a binary message holding the
// 8-byte header (version, u24 route_id, u32 request_id) and a JSON body,
// route ids from the gateway's route table. Which listener, which envelope
// and the route table come from config.json, served beside this page by the
// gateway's admin server at /play/.
//
// Query parameters: user, room (fill the form and play at once), ws (a
// WebSocket URL instead of config.json's), auto=1 (a demo and test mode
// that presses arrow keys by itself and reports, in #result and as the
// promise window.shieldDone, the first other player it saw move; with
// expect=NAME, that player).

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

// Conn is one session: requests paired with their answers by request id,
// pushes dispatched by route name.
class Conn {
  constructor(url, envelope, routes) {
    this.envelope = envelope;
    this.routes = routes;                  // name -> id
    this.names = {};                       // id -> name
    for (const [name, id] of Object.entries(routes)) this.names[id] = name;
    this.nextID = 1;
    this.pending = new Map();              // request_id -> {resolve, reject}
    this.onPush = {};                      // route name -> function(body)
    this.onClose = () => {};
    this.ws = new WebSocket(url);
    this.ws.binaryType = "arraybuffer";
    this.opened = new Promise((resolve, reject) => {
      this.ws.onopen = resolve;
      this.ws.onerror = () => reject(new Error("cannot connect to " + url));
    });
    this.ws.onmessage = (ev) => this.receive(ev.data);
    this.ws.onclose = (ev) => {
      const err = new Error(`connection closed (${ev.code} ${ev.reason || ""})`);
      for (const p of this.pending.values()) p.reject(err);
      this.pending.clear();
      this.onClose(err);
    };
    this.heartbeat = setInterval(() => this.send({ kind: "heartbeat" }), 20000);
  }

  // call sends a request and resolves with the response body.
  call(route, body) {
    const id = this.nextID++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.send({ kind: "request", route, id, body });
    });
  }

  send(f) {
    if (this.ws.readyState !== WebSocket.OPEN) return;
    this.ws.send(this.envelope === "delimiter" ? encodeWrapper(f) : encodeIdlen(f, this.routes));
  }

  receive(data) {
    const f = typeof data === "string" ? decodeWrapper(data) : decodeIdlen(data, this.names);
    switch (f.kind) {
      case "response":
      case "error": {
        const p = this.pending.get(f.id);
        if (!p) return;
        this.pending.delete(f.id);
        if (f.kind === "response") p.resolve(f.body);
        else p.reject(new Error(`${f.code}: ${f.message}`));
        return;
      }
      case "push": {
        const fn = this.onPush[f.route];
        if (fn) fn(f.body);
        return;
      }
      case "notice":
        log(`notice ${f.code}: ${f.message}`);
        return;
      default: // the heartbeat echo
    }
  }

  close() {
    clearInterval(this.heartbeat);
    this.ws.close(1000);
  }
}

// delimiter: one JSON wrapper per text message, without the newline.
function encodeWrapper(f) {
  if (f.kind === "heartbeat") return JSON.stringify({ type: "heartbeat" });
  return JSON.stringify({ type: "request", route: f.route, request_id: f.id, payload: f.body });
}

function decodeWrapper(text) {
  const w = JSON.parse(text);
  return { kind: w.type, route: w.route, id: w.request_id, body: w.payload, code: w.code, message: w.message };
}

// idlen without its u32 length: version u8 = 1, route_id u24, request_id
// u32, then the body (JSON here). The gateway's frames say their kind by
// their ids: route 0 is an error (request_id set), a notice or the
// heartbeat echo; request_id 0 on a route is a push.
const utf8 = new TextEncoder(), utf8d = new TextDecoder();

function encodeIdlen(f, routes) {
  const body = f.kind === "heartbeat" ? new Uint8Array(0) : utf8.encode(JSON.stringify(f.body ?? {}));
  const route = f.kind === "heartbeat" ? 0 : routes[f.route];
  if (route === undefined) throw new Error("unknown route " + f.route);
  const msg = new Uint8Array(8 + body.length);
  const v = new DataView(msg.buffer);
  v.setUint32(0, route);          // the low 24 bits are the route_id...
  v.setUint8(0, 1);               // ...under the version byte
  v.setUint32(4, f.kind === "heartbeat" ? 0 : f.id);
  msg.set(body, 8);
  return msg;
}

function decodeIdlen(buf, names) {
  const v = new DataView(buf);
  const route = v.getUint32(0) & 0xffffff, id = v.getUint32(4);
  const text = utf8d.decode(new Uint8Array(buf, 8));
  const body = text === "" ? null : JSON.parse(text);
  if (route === 0) {
    if (text === "") return { kind: "heartbeat" };
    return { kind: id === 0 ? "notice" : "error", id, code: body.code, message: body.message };
  }
  return { kind: id === 0 ? "push" : "response", route: names[route], id, body };
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

async function config() {
  const res = await fetch("config.json", { cache: "no-store" });
  if (!res.ok) throw new Error("config.json: HTTP " + res.status);
  const cfg = await res.json();
  if (params.get("ws")) cfg.url = params.get("ws");
  return cfg;
}

async function play(user, room) {
  const cfg = await config();
  statusLine.textContent = `connecting to ${cfg.url} (${cfg.envelope})`;
  const conn = new Conn(cfg.url, cfg.envelope, cfg.routes);
  await conn.opened;
  let moves = 0;
  const others = new Set(); // players seen moving, after our join
  conn.onClose = (err) => { statusLine.textContent = err.message; fail(err); };
  conn.onPush.position = (p) => {
    players.set(p.player_id, { x: p.x, y: p.y });
    if (p.player_id !== me) others.add(p.player_id);
    draw();
    const expect = params.get("expect");
    const seen = expect ? others.has(expect) : others.size > 0;
    if (seen && moves >= 2) {
      const other = expect || [...others][0];
      const result = { user: me, saw: other, at: players.get(other), moves };
      document.getElementById("result").textContent = JSON.stringify(result);
      finish(result);
    }
  };

  const login = await conn.call("login", { user });
  me = login.player_id;
  const joined = await conn.call("join_room", { room });
  statusLine.textContent = `${me} in ${joined.room} with ${joined.members - 1} other player(s): move with the arrow keys`;
  log(`logged in as ${me}, joined ${joined.room}`);

  const pos = { x: Math.floor(Math.random() * cols), y: Math.floor(Math.random() * rows) };
  const move = async () => {
    moves++;
    try {
      await conn.call("move", pos);
    } catch (err) {
      log("move: " + err.message);
    }
  };
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
