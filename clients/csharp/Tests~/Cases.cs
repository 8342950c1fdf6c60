// The tests: the codec against docs/protocol.md's bytes, every frame kind
// over TCP and WebSocket with idlen and typelen against a real gateway,
// resume with queued pushes, a failed resume, the dispatcher, a fake server
// that closes mid-call or sends malformed frames, and Dispose's threads.
using System;
using System.Collections.Generic;
using System.IO;
using System.Linq;
using System.Text;
using System.Threading;
using System.Threading.Tasks;
using Shield.Examples;
using Shield.Examples.Game;
using Shield.Json;

namespace Shield.Tests
{
    /// <summary>The test cases.</summary>
    public static class Cases
    {
        static string Env(string k)
        {
            var v = Environment.GetEnvironmentVariable(k);
            if (string.IsNullOrEmpty(v)) throw new CheckFailed(k + " is not set (run clients/csharp/test.sh)");
            return v;
        }

        static int seq;

        /// <summary>An unlabelled metric of the gateway's /metrics (SHIELD_ADMIN); -1 when absent.</summary>
        static double Metric(string name)
        {
            var req = (System.Net.HttpWebRequest)System.Net.WebRequest.Create(Env("SHIELD_ADMIN") + "/metrics");
            req.Timeout = 5000;
            req.ReadWriteTimeout = 5000;
            using (var resp = req.GetResponse())
            using (var r = new StreamReader(resp.GetResponseStream()))
            {
                string line;
                while ((line = r.ReadLine()) != null)
                    if (line.StartsWith(name + " ", StringComparison.Ordinal))
                        return double.Parse(line.Substring(name.Length + 1), System.Globalization.CultureInfo.InvariantCulture);
            }
            return -1;
        }

        /// <summary>A user name no other test uses.</summary>
        static string User(string p) { return p + "-" + Interlocked.Increment(ref seq) + "-" + Environment.TickCount % 100000; }

        static ClientOptions Opts(Envelope env, ReconnectOptions r = null)
        {
            return new ClientOptions { Envelope = env, HeartbeatMs = 0, CallTimeoutMs = 10000, Reconnect = r, ConnectTimeoutMs = 5000 };
        }

        static ShieldClient Connect(string url, ClientOptions o)
        {
            return T.Get(ShieldClient.ConnectAsync(url, o), 10000, "connect " + url);
        }

        /// <summary>Every test by name.</summary>
        public static IEnumerable<KeyValuePair<string, Action>> All()
        {
            var l = new List<KeyValuePair<string, Action>>();
            Action<string, Action> add = (n, a) => l.Add(new KeyValuePair<string, Action>(n, a));
            add("codec: docs/protocol.md §10 bytes", CodecBytes);
            add("codec: malformed messages", CodecMalformed);
            add("json: read and write", JsonRoundTrip);
            add("doc snippet: docs/clients.md is Samples~/DocExample.cs", DocSnippet);
            foreach (var lis in new[] { "TCP_IDLEN", "TCP_TYPELEN", "WS_IDLEN", "WS_TYPELEN" })
            {
                var name = lis;
                add("real gateway " + name.ToLowerInvariant() + ": every frame kind with the stubs", () => Frames(Env("SHIELD_" + name), name.EndsWith("TYPELEN") ? Envelope.Typelen : Envelope.Idlen));
            }
            add("real gateway: the doc example runs", () => T.Ok(T.Get(DocExample.Run(Env("SHIELD_TCP_IDLEN"), User("doc")), 15000, "doc example") >= 1, "members"));
            add("real gateway tcp_idlen: resume, queued pushes in order after the reconnect handler", () => Resume(Env("SHIELD_TCP_IDLEN"), Envelope.Idlen));
            add("real gateway ws_typelen: resume, queued pushes in order after the reconnect handler", () => Resume(Env("SHIELD_WS_TYPELEN"), Envelope.Typelen));
            add("real gateway: a failed resume means log in again", FailedResume);
            add("real gateway: the dispatcher holds handlers until DispatchPending", Dispatcher);
            add("real gateway: call timeout and cancellation", TimeoutAndCancel);
            add("fake server: closing mid-call fails the call, which is never re-sent", ClosingMidCall);
            add("fake server: malformed frames close the client without a reconnect", Malformed);
            add("fake server: a truncated frame is a drop, and the client reconnects", Truncated);
            add("fake server: a dead heartbeat drops the connection", DeadHeartbeat);
            add("fake server: status frames, unknown ones ignored, retry_after_ms", StatusFrames);
            add("dispose: no client thread left running", () => T.Until(() => ShieldClient.ActiveThreads == 0, 5000, "ActiveThreads == 0 (now " + ShieldClient.ActiveThreads + ")"));
            return l;
        }

        static void CodecBytes()
        {
            var login = Codec.Framed(Codec.Request(Envelope.Idlen, 1001, 1, Encoding.UTF8.GetBytes("{\"user\":\"alice\"}")));
            T.Eq(T.Hex(login), "00000018010003e9000000017b2275736572223a22616c696365227d", "idlen login");
            var tl = Codec.Framed(Codec.Request(Envelope.Typelen, 1001, 1, Encoding.UTF8.GetBytes("{\"user\":\"alice\"}")));
            T.Eq(T.Hex(tl), "0000001c010103e900000000000000017b2275736572223a22616c696365227d", "typelen login");
            T.Eq(T.Hex(Codec.Framed(Codec.Heartbeat(Envelope.Idlen))), "000000080100000000000000", "heartbeat");
            var dl = Codec.Framed(Codec.Deadline(Envelope.Idlen, 5, 2500));
            T.Eq(T.Hex(dl), "0000001c01000000000000057b22646561646c696e655f6d73223a323530307d", "deadline");
            T.Eq(Encoding.UTF8.GetString(Codec.Heartbeat(Envelope.Typelen, "t\"k"), 12, 17), "{\"resume\":\"t\\\"k\"}", "resume body");
            var push = T.Unhex("00000027010008350000000" + "07b22706c617965725f6964223a22626f62222c2278223a312c2279223a327d");
            var frames = new List<InFrame>();
            var dec = new StreamDecoder(Envelope.Idlen, 65536);
            foreach (var b in push) dec.Push(new[] { b }, 1, frames); // one byte at a time
            T.Eq(frames.Count, 1, "frames");
            T.Eq(frames[0].Kind, FrameKind.Push, "kind");
            T.Eq(frames[0].RouteId, 2101, "route");
            T.Eq(Encoding.UTF8.GetString(frames[0].Body), "{\"player_id\":\"bob\",\"x\":1,\"y\":2}", "body");
            var err = Encoding.UTF8.GetBytes("{\"code\":\"client_rpc.busy\",\"message\":\"m\",\"retry_after_ms\":100}");
            var em = new byte[8 + err.Length];
            em[0] = 1; em[7] = 2;
            Buffer.BlockCopy(err, 0, em, 8, err.Length);
            var ef = Codec.Decode(Envelope.Idlen, em, 0, em.Length, 65536);
            T.Eq(ef.Kind, FrameKind.Error, "error kind");
            T.Eq(ef.Code + "/" + ef.Message + "/" + ef.RetryAfterMs + "/" + ef.RequestId, "client_rpc.busy/m/100/2", "error");
        }

        static void CodecMalformed()
        {
            Func<Envelope, string, string> reason = (env, hex) =>
            {
                try
                {
                    new StreamDecoder(env, 1024).Push(T.Unhex(hex), hex.Replace(" ", "").Length / 2, new List<InFrame>());
                    return "none";
                }
                catch (ShieldProtocolException e) { return e.Reason; }
            };
            T.Eq(reason(Envelope.Idlen, "00000008 02 000000 00000000"), "bad_version", "version 2");
            T.Eq(reason(Envelope.Idlen, "ffffffff"), "too_large", "huge length");
            T.Eq(reason(Envelope.Idlen, "00000004 01000000"), "too_short", "short length");
            T.Eq(reason(Envelope.Idlen, "0000000a 01 000000 00000000 7878"), "bad_system_frame", "status not JSON");
            T.Eq(reason(Envelope.Idlen, "0000000b 01 000000 00000001 5b315d"), "bad_system_frame", "error body an array");
            T.Eq(reason(Envelope.Typelen, "0000000c 01 09 0000 0000000000000000"), "bad_type", "typelen type 9");
            T.Eq(reason(Envelope.Typelen, "0000000c 01 01 0001 0000000000000001"), "bad_type", "typelen request from a gateway");
            T.Eq(reason(Envelope.Typelen, "0000000d 01 05 0000 0000000000000000 78"), "bad_system_frame", "heartbeat with a body");
            T.Eq(reason(Envelope.Idlen, "0000000c 01 000000 00000000 7b7d"), "none", "a partial frame waits");
        }

        static void JsonRoundTrip()
        {
            var v = JsonValue.Parse(" {\"a\":[1,2.5,-3e2,true,false,null],\"s\":\"x\\\"\\u00e9\\n\",\"o\":{}} ");
            T.Eq(JsonValue.Write(v), "{\"a\":[1,2.5,-300,true,false,null],\"s\":\"x\\\"\u00e9\\n\",\"o\":{}}", "round trip");
            foreach (var bad in new[] { "", "{", "[1,]", "{\"a\" 1}", "01", "tru", "\"\\x\"", "1 2", "{\"a\":1,}" })
            {
                bool threw = false;
                try { JsonValue.Parse(bad); } catch (JsonException) { threw = true; }
                T.Ok(threw, "parses " + bad);
            }
            var req = new MoveRequest { X = 1.5, Y = -2 };
            T.Eq(JsonValue.Write(req), "{\"x\":1.5,\"y\":-2}", "MoveRequest");
            T.Eq(JsonValue.Write(new LoginRequest { User = "a" }), "{\"user\":\"a\"}", "optional left out");
            var p = PositionPush.FromJson(JsonValue.Parse("{\"player_id\":\"bob\",\"x\":1,\"y\":2,\"new\":true}"));
            T.Eq(p.PlayerId + p.X + p.Y, "bob12", "PositionPush");
        }

        static void DocSnippet()
        {
            string root = Env("SHIELD_ROOT");
            var doc = File.ReadAllText(Path.Combine(root, "docs", "clients.md"));
            int at = doc.IndexOf("```csharp\n", StringComparison.Ordinal);
            T.Ok(at >= 0, "docs/clients.md has a ```csharp block");
            at += "```csharp\n".Length;
            string snippet = doc.Substring(at, doc.IndexOf("```", at, StringComparison.Ordinal) - at);
            var src = File.ReadAllText(Path.Combine(root, "clients", "csharp", "Samples~", "DocExample.cs"));
            int b = src.IndexOf("// doc:begin\n", StringComparison.Ordinal) + "// doc:begin\n".Length, e = src.IndexOf("            // doc:end", StringComparison.Ordinal);
            var lines = src.Substring(b, e - b).Split('\n').Select(x => x.Length >= 12 ? x.Substring(12) : x.TrimStart());
            T.Eq(snippet, string.Join("\n", lines), "the snippet (docs/clients.md's first ```csharp block vs Samples~/DocExample.cs between the markers)");
        }

        /// <summary>Login, join, a push, an error, a notify, a heartbeat, status frames and a notice, through the generated stubs.</summary>
        static void Frames(string url, Envelope env)
        {
            string ua = User("a"), ub = User("b"), room = User("room");
            var statuses = new List<string>();
            var pushes = new List<PositionPush>();
            var notices = new List<string>();
            Exception closedWith = null;
            bool closed = false;
            var a = Connect(url, Opts(env));
            var b = Connect(url, Opts(env));
            try
            {
                a.Status += s => { lock (statuses) statuses.Add(s.Code); };
                a.Notice += (code, msg) => { lock (notices) notices.Add(code); };
                a.Closed += e => { closedWith = e; Volatile.Write(ref closed, true); };
                a.OnPosition(p => { lock (pushes) pushes.Add(p); });
                T.Eq(T.Get(a.LoginAsync(new LoginRequest { User = ua }), 10000, "login a").PlayerId, ua, "player_id");
                T.Until(() => { lock (statuses) return statuses.Contains("session.resume_token"); }, 5000, "session.resume_token");
                T.Ok(a.ResumeToken != null, "a resume token");
                T.Eq(T.Get(a.JoinRoomAsync(new JoinRoomRequest { Room = room }), 10000, "join a").Members, 1L, "members after a");
                T.Get(b.LoginAsync(new LoginRequest { User = ub }), 10000, "login b");
                T.Eq(T.Get(b.JoinRoomAsync(new JoinRoomRequest { Room = room }), 10000, "join b").Members, 2L, "members after b");
                T.Get(b.MoveAsync(new MoveRequest { X = 3, Y = 4 }), 10000, "move b");
                T.Until(() => { lock (pushes) return pushes.Any(p => p.PlayerId == ub && p.X == 3 && p.Y == 4); }, 5000, "b's position push");
                // An error frame: the schema says join_room needs a room.
                var se = T.Fails(a.CallAsync(Route.JoinRoom, "{}"), 10000, "join without a room") as ShieldException;
                T.Ok(se != null, "a ShieldException");
                T.Eq(se.Code, "client_rpc.schema_violation", "code");
                T.Eq(se.RouteId, Route.JoinRoom, "route of the error");
                // A notify: no answer, but the room sees the move.
                T.Ok(b.Notify(Route.Move, JsonValue.Write(new MoveRequest { X = 5, Y = 6 })), "notify sent");
                T.Until(() => { lock (pushes) return pushes.Any(p => p.PlayerId == ub && p.X == 5); }, 5000, "the notify's push");
                long rx = a.FramesReceived;
                T.Ok(a.Heartbeat(), "heartbeat sent");
                T.Until(() => a.FramesReceived > rx, 5000, "the heartbeat's echo");
                T.Eq(a.PendingCalls, 0, "pending calls");
                // A declared deadline: the deadline frame right before its request (docs/protocol.md §11).
                var od = Opts(env);
                od.DeclareDeadlines = true;
                using (var d = Connect(url, od))
                {
                    string ud = User("dl");
                    T.Eq(T.Get(d.LoginAsync(new LoginRequest { User = ud }, TimeSpan.FromSeconds(5)), 10000, "login with a deadline").PlayerId, ud, "deadline login");
                    T.Get(d.JoinRoomAsync(new JoinRoomRequest { Room = User("dlroom") }, TimeSpan.FromSeconds(5)), 10000, "join with a deadline");
                    T.Eq(d.State, ClientState.Open, "still open after deadline frames");
                }
                // A notice: a login as a's player from elsewhere kicks a (duplicate_login: kick_old).
                using (var c = Connect(url, Opts(env)))
                {
                    T.Get(c.LoginAsync(new LoginRequest { User = ua }), 10000, "login c as a");
                    T.Until(() => Volatile.Read(ref closed), 5000, "a closed");
                }
                lock (notices) T.Ok(notices.Contains("session.kicked"), "session.kicked notice, got " + string.Join(",", notices));
                var ce = closedWith as ShieldClosedException;
                T.Ok(ce != null && ce.Notice != null && ce.Notice.Code == "session.kicked", "closed with the notice: " + closedWith);
                T.Eq(a.State, ClientState.Closed, "a's state");
                T.Ok(T.Fails(a.MoveAsync(new MoveRequest()), 1000, "call after close") is ShieldClosedException, "ShieldClosedException after close");
            }
            finally
            {
                a.Dispose();
                b.Dispose();
            }
        }

        /// <summary>A drop, pushes queued meanwhile, the resume: they arrive in order, after the reconnect handler has returned.</summary>
        static void Resume(string url, Envelope env)
        {
            string ua = User("ra"), ub = User("rb"), room = User("rroom");
            var events = new List<string>();
            Action<string> log = s => { lock (events) events.Add(s); };
            var a = Connect(url, Opts(env, new ReconnectOptions { BaseMs = 1500, MaxMs = 1500, Jitter = 0, Attempts = 3 }));
            var b = Connect(url, Opts(env));
            try
            {
                T.Get(a.LoginAsync(new LoginRequest { User = ua }), 10000, "login a");
                T.Get(a.JoinRoomAsync(new JoinRoomRequest { Room = room }), 10000, "join a");
                T.Get(b.LoginAsync(new LoginRequest { User = ub }), 10000, "login b");
                T.Get(b.JoinRoomAsync(new JoinRoomRequest { Room = room }), 10000, "join b");
                T.Until(() => a.ResumeToken != null, 5000, "a's token");
                string before = a.ResumeToken;
                a.Disconnected += d => log("disconnect reconnecting=" + d.Reconnecting);
                a.Status += s => { if (s.Code != "session.resume_token") log("status " + s.Code); };
                a.Reconnected += r => { Thread.Sleep(200); log("reconnect resumed=" + r.Resumed + " attempt=" + r.Attempt); };
                a.OnPosition(p => { if (p.PlayerId == ub) log("push " + p.X); });
                var pending = a.CallAsync(4242, "{}"); // an unknown route: dropped at the edge, never answered
                a.DropForTest();
                T.Ok(T.Fails(pending, 5000, "the pending call") is ShieldClosedException, "pending call failed with ShieldClosedException");
                T.Ok(T.Fails(a.ProfileAsync(null), 1000, "a call while reconnecting") is ShieldClosedException, "no calls while reconnecting");
                // The gateway sees the EOF and suspends the session: what it sends from now on is queued.
                T.Until(() => Metric("shield_sessions_suspended") >= 1, 5000, "the session suspended (shield_sessions_suspended)");
                for (int i = 1; i <= 3; i++) T.Get(b.MoveAsync(new MoveRequest { X = i, Y = 0 }), 10000, "move " + i);
                T.Until(() => { lock (events) return events.Count >= 6; }, 10000, "six events");
                Thread.Sleep(100);
                lock (events)
                    T.Eq(string.Join(" | ", events), "disconnect reconnecting=True | status session.resumed | reconnect resumed=True attempt=1 | push 1 | push 2 | push 3", "events");
                T.Eq(a.State, ClientState.Open, "state");
                T.Ok(a.ResumeToken != null && a.ResumeToken != before, "a new token");
                T.Get(a.MoveAsync(new MoveRequest { X = 9, Y = 9 }), 10000, "a call on the resumed session (still in the room)");
            }
            finally
            {
                a.Dispose();
                b.Dispose();
            }
        }

        static void FailedResume()
        {
            var infos = new List<ReconnectInfo>();
            var a = Connect(Env("SHIELD_TCP_IDLEN"), Opts(Envelope.Idlen, new ReconnectOptions { BaseMs = 50, MaxMs = 50, Attempts = 3 }));
            try
            {
                string u = User("fr");
                T.Get(a.LoginAsync(new LoginRequest { User = u }), 10000, "login");
                T.Until(() => a.ResumeToken != null, 5000, "token");
                a.Reconnected += r => { lock (infos) infos.Add(r); };
                a.ResumeToken = "not-a-token";
                a.DropForTest();
                T.Until(() => { lock (infos) return infos.Count == 1; }, 10000, "the reconnect");
                T.Ok(!infos[0].Resumed, "not resumed");
                T.Ok(!string.IsNullOrEmpty(infos[0].Message), "the gateway's message");
                T.Eq(a.ResumeToken, null, "token dropped");
                T.Ok(T.Fails(a.ProfileAsync(null, TimeSpan.FromMilliseconds(300)), 5000, "profile on a new session") is ShieldTimeoutException, "a new session is not logged in (its call is dropped at the edge)");
                T.Eq(T.Get(a.LoginAsync(new LoginRequest { User = u }), 10000, "log in again").PlayerId, u, "logged in again");
            }
            finally { a.Dispose(); }
        }

        static void Dispatcher()
        {
            string ua = User("da"), ub = User("db"), room = User("droom");
            var o = Opts(Envelope.Idlen);
            o.UseDispatcher = true;
            var a = Connect(Env("SHIELD_TCP_IDLEN"), o);
            var b = Connect(Env("SHIELD_TCP_IDLEN"), Opts(Envelope.Idlen));
            try
            {
                int seen = 0;
                Thread on = null;
                a.OnPosition(p => { if (p.PlayerId == ub) { seen++; on = Thread.CurrentThread; } });
                T.Get(a.LoginAsync(new LoginRequest { User = ua }), 10000, "login a");
                T.Get(a.JoinRoomAsync(new JoinRoomRequest { Room = room }), 10000, "join a");
                T.Get(b.LoginAsync(new LoginRequest { User = ub }), 10000, "login b");
                T.Get(b.JoinRoomAsync(new JoinRoomRequest { Room = room }), 10000, "join b");
                T.Get(b.MoveAsync(new MoveRequest { X = 1, Y = 1 }), 10000, "move");
                Thread.Sleep(300);
                T.Eq(seen, 0, "no handler before DispatchPending");
                T.Until(() => { a.DispatchPending(); return seen == 1; }, 5000, "the push through DispatchPending");
                T.Ok(on == Thread.CurrentThread, "on the dispatching thread");
            }
            finally
            {
                a.Dispose();
                b.Dispose();
            }
        }

        static void TimeoutAndCancel()
        {
            using (var fake = new FakeServer())
            using (var c = Connect(fake.Url, Opts(Envelope.Idlen)))
            {
                fake.Accept();
                var t0 = DateTime.UtcNow;
                var e = T.Fails(c.CallAsync(1, "{}", TimeSpan.FromMilliseconds(150)), 5000, "a call never answered");
                T.Ok(e is ShieldTimeoutException, "ShieldTimeoutException, got " + e);
                T.Ok((DateTime.UtcNow - t0).TotalMilliseconds < 2000, "within its timeout");
                using (var cts = new CancellationTokenSource())
                {
                    var t = c.CallAsync(1, "{}", Timeout.InfiniteTimeSpan, cts.Token);
                    cts.Cancel();
                    T.Ok(T.Fails(t, 5000, "a cancelled call") is OperationCanceledException, "OperationCanceledException");
                }
                T.Eq(c.PendingCalls, 0, "nothing pending");
            }
        }

        static void ClosingMidCall()
        {
            using (var fake = new FakeServer())
            {
                var infos = new List<string>();
                var c = Connect(fake.Url, Opts(Envelope.Idlen, new ReconnectOptions { BaseMs = 20, MaxMs = 20, Attempts = 3 }));
                try
                {
                    c.Disconnected += d => { lock (infos) infos.Add("disconnect " + d.Reconnecting); };
                    c.Reconnected += r => { lock (infos) infos.Add("reconnect " + r.Resumed); };
                    var s1 = fake.Accept();
                    var call = c.CallAsync(1001, "{\"user\":\"x\"}");
                    var req = s1.Next();
                    T.Eq(FakeConn.Route(req), 1001, "the request");
                    s1.Close();
                    T.Ok(T.Fails(call, 5000, "the call") is ShieldClosedException, "ShieldClosedException");
                    var s2 = fake.Accept();
                    T.Until(() => { lock (infos) return infos.Count == 2; }, 5000, "disconnect and reconnect");
                    T.Eq(string.Join(",", infos), "disconnect True,reconnect False", "events");
                    T.Ok(!s2.Hears(300), "the call is not sent again (nor a resume: no token)");
                    var call2 = c.CallAsync(1001, "{\"user\":\"x\"}");
                    var req2 = s2.Next();
                    s2.Frame(1001, FakeConn.Rid(req2), "{\"player_id\":\"x\"}");
                    T.Eq(T.Get(call2, 5000, "a new call"), "{\"player_id\":\"x\"}", "answer");
                }
                finally { c.Dispose(); }
            }
        }

        static void Malformed()
        {
            foreach (var bad in new[] { "00000008 02 000000 00000000", "00100000", "0000000a 01 000000 00000000 7878", "0000000a 01 000000 00000000 5b5d" })
            {
                using (var fake = new FakeServer())
                {
                    Exception closedWith = null;
                    bool closed = false;
                    var c = Connect(fake.Url, Opts(Envelope.Idlen, new ReconnectOptions { BaseMs = 10, MaxMs = 10 }));
                    try
                    {
                        c.Closed += e => { closedWith = e; Volatile.Write(ref closed, true); };
                        var s = fake.Accept();
                        var call = c.CallAsync(1, "{}");
                        s.Next();
                        s.Raw(T.Unhex(bad));
                        T.Ok(T.Fails(call, 5000, "the call") is ShieldClosedException, bad + ": the call failed with ShieldClosedException");
                        T.Until(() => Volatile.Read(ref closed), 5000, bad + ": closed");
                        T.Ok(closedWith is ShieldProtocolException, bad + ": closed with a ShieldProtocolException, got " + closedWith);
                        T.Eq(c.State, ClientState.Closed, bad + ": state");
                        T.Ok(!fake.Connects(300), bad + ": no reconnect");
                    }
                    finally { c.Dispose(); }
                }
            }
        }

        static void Truncated()
        {
            using (var fake = new FakeServer())
            {
                var c = Connect(fake.Url, Opts(Envelope.Idlen, new ReconnectOptions { BaseMs = 10, MaxMs = 10 }));
                try
                {
                    var s = fake.Accept();
                    s.Raw(T.Unhex("00000010 01 000835 00000000 7b"));
                    s.Close();
                    fake.Accept();
                    T.Until(() => c.State == ClientState.Open, 5000, "open again");
                }
                finally { c.Dispose(); }
            }
        }

        static void DeadHeartbeat()
        {
            using (var fake = new FakeServer())
            {
                var o = Opts(Envelope.Idlen, new ReconnectOptions { BaseMs = 10, MaxMs = 10 });
                o.HeartbeatMs = 100;
                var drops = 0;
                var c = Connect(fake.Url, o);
                try
                {
                    c.Disconnected += d => Interlocked.Increment(ref drops);
                    var s = fake.Accept();
                    var hb = s.Next();
                    T.Eq(T.Hex(hb), "0100000000000000", "a heartbeat");
                    T.Until(() => Volatile.Read(ref drops) == 1, 5000, "the drop when no echo comes");
                    fake.Accept();
                }
                finally { c.Dispose(); }
            }
        }

        static void StatusFrames()
        {
            using (var fake = new FakeServer())
            {
                var got = new List<StatusFrame>();
                var c = Connect(fake.Url, Opts(Envelope.Idlen));
                try
                {
                    c.Status += st => { lock (got) got.Add(st); };
                    var s = fake.Accept();
                    s.Frame(0, 0, "{\"code\":\"shiny.new_status\",\"x\":1}");
                    s.Frame(0, 0, "{\"code\":\"gateway.drain_started\",\"grace_ms\":10000,\"retry_after_ms\":500}");
                    s.Frame(0, 0, "{\"code\":\"session.resume_token\",\"token\":\"tok\"}");
                    var call = c.CallAsync(1, "{}");
                    var req = s.Next();
                    s.Frame(0, FakeConn.Rid(req), "{\"code\":\"client_rpc.draining\",\"message\":\"go away\",\"retry_after_ms\":42}");
                    var e = T.Fails(call, 5000, "a draining call") as ShieldException;
                    T.Ok(e != null && e.Code == "client_rpc.draining" && e.RetryAfterMs == 42 && e.RouteId == 1, "the error with retry_after_ms: " + e);
                    T.Until(() => { lock (got) return got.Count == 2; }, 5000, "two known statuses");
                    T.Eq(got[0].Code + " " + got[0].GraceMs + " " + got[0].RetryAfterMs, "gateway.drain_started 10000 500", "drain_started");
                    T.Eq(got[1].Token, "tok", "resume token");
                    T.Eq(c.ResumeToken, "tok", "the client keeps it");
                }
                finally { c.Dispose(); }
            }
        }
    }
}
