// The client: calls paired with their answers, notifies, pushes, notices and
// status frames, heartbeats, and reconnect with session resume
// (docs/protocol.md §6-§8).
//
// Threads: each connection has a reader thread; one supervisor thread sends
// heartbeats and reconnects; without UseDispatcher one event thread runs the
// app's handlers in frame order. Dispose ends and joins all of them.
using System;
using System.Collections.Generic;
using System.IO;
using System.Text;
using System.Threading;
using System.Threading.Tasks;

namespace Shield
{
    /// <summary>One client of a Shield gateway. Make one with ConnectAsync; Dispose it when done.</summary>
    public sealed partial class ShieldClient : IDisposable
    {
        static int activeThreads;

        /// <summary>Threads of all clients still running (0 once every client is disposed).</summary>
        public static int ActiveThreads { get { return Volatile.Read(ref activeThreads); } }

        sealed class Pending
        {
            public TaskCompletionSource<byte[]> Tcs;
            public int Route;
            public CancellationTokenSource Cts;
            public CancellationTokenRegistration Reg;
        }

        sealed class Link
        {
            public Connection Conn;
            public Thread Reader;
            public bool Dead;
            public long Rx;
            public Notice Notice;
            public bool SessionOver;
        }

        readonly Uri url;
        readonly ClientOptions o;
        readonly object mu = new object();
        readonly Dictionary<ulong, Pending> pending = new Dictionary<ulong, Pending>();
        readonly Dictionary<int, List<Action<Push>>> pushHandlers = new Dictionary<int, List<Action<Push>>>();
        readonly Queue<Action> events = new Queue<Action>();
        readonly CancellationTokenSource closing = new CancellationTokenSource();
        readonly Random random = new Random();
        readonly List<Thread> threads = new List<Thread>();
        ClientState state = ClientState.Connecting;
        Link link;
        ulong nextId;
        string token;
        int attempt;
        long retryAt, resumeBy;
        Exception closeError;

        /// <summary>Pushes on routes without a handler of their own.</summary>
        public event Action<Push> AnyPush;
        /// <summary>Notices (session.kicked, gateway.draining, ...): code and message; the gateway closes the session right after.</summary>
        public event Action<string, string> Notice;
        /// <summary>Status frames the client knows (session.resume_token, session.resumed, session.resume_failed, gateway.drain_started).</summary>
        public event Action<StatusFrame> Status;
        /// <summary>A reconnect succeeded; Resumed says whether the session survived or the app must log in again. Pushes that follow a resume wait until this handler returns.</summary>
        public event Action<ReconnectInfo> Reconnected;
        /// <summary>The open connection ended; pending calls have failed.</summary>
        public event Action<DisconnectInfo> Disconnected;
        /// <summary>The client closed for good: null when the app disposed it, else why (a ShieldProtocolException, a ShieldClosedException with the notice, or the last reconnect's failure).</summary>
        public event Action<Exception> Closed;

        ShieldClient(Uri url, ClientOptions options)
        {
            this.url = url;
            o = options ?? new ClientOptions();
            if (o.MaxFrameBytes < Codec.HeaderSize(o.Envelope)) throw new ArgumentOutOfRangeException("options", "MaxFrameBytes below the header size");
            if (o.ConnectTimeoutMs < 1) throw new ArgumentOutOfRangeException("options", "ConnectTimeoutMs must be >= 1");
        }

        /// <summary>
        /// Connects to url (tcp://host:port, tls://host:port,
        /// ws://host:port/path, wss://host:port/path) and completes once the
        /// first connection is open. Fails with ShieldTimeoutException,
        /// IOException or OperationCanceledException.
        /// </summary>
        public static Task<ShieldClient> ConnectAsync(string url, ClientOptions options = null, CancellationToken ct = default(CancellationToken))
        {
            var c = new ShieldClient(new Uri(url), options);
            return Task.Run(() => c.Open(ct));
        }

        ShieldClient Open(CancellationToken ct)
        {
            Connection conn;
            using (var both = CancellationTokenSource.CreateLinkedTokenSource(ct, closing.Token))
                conn = Connection.Dial(url, o.Envelope, o.MaxFrameBytes, o.ConnectTimeoutMs, both.Token);
            lock (mu)
            {
                if (state == ClientState.Closed)
                {
                    conn.Dispose();
                    throw new ShieldClosedException("the client was closed while connecting");
                }
                state = ClientState.Open;
                if (!o.UseDispatcher) Start("Shield events", EventLoop);
                Start("Shield supervisor", Supervise);
                StartLink(conn);
            }
            return this;
        }

        /// <summary>The envelope this client speaks.</summary>
        public Envelope Envelope { get { return o.Envelope; } }

        /// <summary>The state now.</summary>
        public ClientState State { get { lock (mu) return state; } }

        /// <summary>The latest resume token, or null.</summary>
        public string ResumeToken { get { lock (mu) return token; } internal set { lock (mu) token = value; } }

        /// <summary>Calls waiting for their answer.</summary>
        public int PendingCalls { get { lock (mu) return pending.Count; } }

        /// <summary>
        /// Sends a request with a JSON body (your JSON library's text, or
        /// Shield.Json.JsonValue.Write's; null sends an empty body) and
        /// completes with the response's body as text. timeout: null for
        /// ClientOptions.CallTimeoutMs, Timeout.InfiniteTimeSpan for none.
        /// Fails with ShieldException (an error frame),
        /// ShieldTimeoutException, OperationCanceledException (ct), or
        /// ShieldClosedException (not open, or the connection ended first: a
        /// call is never sent twice).
        /// </summary>
        public async Task<string> CallAsync(int route, string json, TimeSpan? timeout = null, CancellationToken ct = default(CancellationToken))
        {
            byte[] body = await CallBytesAsync(route, json == null ? null : Encoding.UTF8.GetBytes(json), timeout, ct).ConfigureAwait(false);
            return Encoding.UTF8.GetString(body);
        }

        /// <summary>CallAsync with the body as bytes (protobuf, raw), as sent and as received.</summary>
        public Task<byte[]> CallBytesAsync(int route, byte[] body, TimeSpan? timeout = null, CancellationToken ct = default(CancellationToken))
        {
            if (ct.IsCancellationRequested) return Cancelled(ct);
            int ms = timeout.HasValue ? (timeout.Value == Timeout.InfiniteTimeSpan ? 0 : (int)Math.Ceiling(timeout.Value.TotalMilliseconds)) : o.CallTimeoutMs;
            var p = new Pending { Tcs = new TaskCompletionSource<byte[]>(TaskCreationOptions.RunContinuationsAsynchronously), Route = route };
            Link l;
            ulong id;
            byte[][] wire;
            lock (mu)
            {
                l = link;
                if (state != ClientState.Open || l == null || l.Dead) return Failed(NotOpen());
                id = NewId();
                try
                {
                    var req = Checked(Codec.Request(o.Envelope, route, id, body));
                    wire = o.DeclareDeadlines && ms > 0 ? new[] { Codec.Deadline(o.Envelope, id, ms), req } : new[] { req };
                }
                catch (Exception e)
                {
                    return Failed(e);
                }
                pending[id] = p;
                // The timer is set while p is pending, so that an answer can
                // always release it (the callback waits for mu if it fires now).
                if (ms > 0 || ct.CanBeCanceled)
                {
                    p.Cts = CancellationTokenSource.CreateLinkedTokenSource(ct);
                    if (ms > 0) p.Cts.CancelAfter(ms);
                    var cid = id;
                    p.Reg = p.Cts.Token.Register(() =>
                    {
                        if (Take(cid, p) == null) return;
                        p.Tcs.TrySetException(ct.IsCancellationRequested
                            ? (Exception)new OperationCanceledException("call cancelled", ct)
                            : new ShieldTimeoutException("no answer on route " + route + " within " + ms + " ms"));
                        ThreadPool.QueueUserWorkItem(_ => Release(p));
                    });
                }
            }
            Write(l, wire);
            return p.Tcs.Task;
        }

        /// <summary>Sends a notify with a JSON body (no answer ever comes). false when the client is not open and it was dropped.</summary>
        public bool Notify(int route, string json)
        {
            return NotifyBytes(route, json == null ? null : Encoding.UTF8.GetBytes(json));
        }

        /// <summary>Notify with the body as bytes.</summary>
        public bool NotifyBytes(int route, byte[] body)
        {
            var msg = Checked(Codec.Notify(o.Envelope, route, body));
            Link l;
            lock (mu)
            {
                l = link;
                if (state != ClientState.Open || l == null || l.Dead) return false;
            }
            return Write(l, msg);
        }

        /// <summary>Sends one heartbeat now (they are also sent every HeartbeatMs). false when not open.</summary>
        public bool Heartbeat()
        {
            Link l;
            lock (mu)
            {
                l = link;
                if (state != ClientState.Open || l == null || l.Dead) return false;
            }
            return Write(l, Codec.Heartbeat(o.Envelope));
        }

        /// <summary>Handles pushes on a route; dispose the result to remove the handler.</summary>
        public IDisposable OnPush(int route, Action<Push> handler)
        {
            if (handler == null) throw new ArgumentNullException("handler");
            lock (mu)
            {
                List<Action<Push>> l;
                if (!pushHandlers.TryGetValue(route, out l)) pushHandlers[route] = l = new List<Action<Push>>();
                l.Add(handler);
            }
            return new Unsubscribe(() =>
            {
                lock (mu)
                {
                    List<Action<Push>> l;
                    if (pushHandlers.TryGetValue(route, out l) && l.Remove(handler) && l.Count == 0) pushHandlers.Remove(route);
                }
            });
        }

        /// <summary>
        /// With UseDispatcher, runs the handlers queued since the last call,
        /// on the calling thread (Unity: from Update()), in frame order, and
        /// returns how many ran; at most max when max &gt; 0. Without
        /// UseDispatcher it does nothing and returns 0.
        /// </summary>
        public int DispatchPending(int max = 0)
        {
            if (!o.UseDispatcher) return 0;
            int n = 0;
            while (max <= 0 || n < max)
            {
                Action a;
                lock (mu)
                {
                    if (events.Count == 0) break;
                    a = events.Dequeue();
                }
                Run(a);
                n++;
            }
            return n;
        }

        /// <summary>
        /// Closes the client: no reconnect; pending calls fail with
        /// ShieldClosedException; the Closed handlers get null. Returns once
        /// the client's threads have ended (each waited for at most 5 s; not
        /// the calling thread, when a handler disposes the client).
        /// </summary>
        public void Dispose()
        {
            Finish(null);
            Thread[] ts;
            lock (mu) ts = threads.ToArray();
            foreach (var t in ts)
                if (t != Thread.CurrentThread) t.Join(5000);
        }

        // ------------------------------------------------------------------

        sealed class Unsubscribe : IDisposable
        {
            Action undo;
            public Unsubscribe(Action undo) { this.undo = undo; }
            public void Dispose() { var u = Interlocked.Exchange(ref undo, null); if (u != null) u(); }
        }

        static Task<byte[]> Failed(Exception e)
        {
            var t = new TaskCompletionSource<byte[]>();
            t.SetException(e);
            return t.Task;
        }

        static Task<byte[]> Cancelled(CancellationToken ct)
        {
            return Failed(new OperationCanceledException("call cancelled", ct));
        }

        ShieldClosedException NotOpen()
        {
            return new ShieldClosedException(state == ClientState.Closed ? "the client is closed" : "the client is not connected (" + state + ")", closeError);
        }

        ulong NewId()
        {
            ulong max = Codec.MaxRequestId(o.Envelope);
            do nextId = nextId >= max ? 1 : nextId + 1;
            while (pending.ContainsKey(nextId));
            return nextId;
        }

        byte[] Checked(byte[] msg)
        {
            if (msg.Length > o.MaxFrameBytes)
                throw new ArgumentException("frame of " + msg.Length + " bytes above MaxFrameBytes " + o.MaxFrameBytes);
            return msg;
        }

        /// <summary>Writes on a link; a broken link is dropped (its calls fail, the reconnect starts).</summary>
        bool Write(Link l, params byte[][] msgs)
        {
            try
            {
                l.Conn.Send(msgs);
                return true;
            }
            catch (Exception e)
            {
                Drop(l, e);
                return false;
            }
        }

        /// <summary>Removes a pending call (only p, when p is not null) and returns it; null when it was not pending.</summary>
        Pending Take(ulong id, Pending p)
        {
            lock (mu)
            {
                Pending q;
                if (!pending.TryGetValue(id, out q) || (p != null && q != p)) return null;
                pending.Remove(id);
                return q;
            }
        }

        void Release(Pending p)
        {
            if (p.Cts == null) return;
            p.Reg.Dispose();
            p.Cts.Dispose();
        }

        /// <summary>Fails every pending call with err; mu held.</summary>
        void FailPending(Exception err)
        {
            var all = new List<Pending>(pending.Values);
            pending.Clear();
            foreach (var p in all)
            {
                p.Tcs.TrySetException(err);
                ThreadPool.QueueUserWorkItem(_ => Release(p));
            }
        }

        Thread Start(string name, ThreadStart body)
        {
            var t = new Thread(() =>
            {
                try { body(); }
                finally { Interlocked.Decrement(ref activeThreads); }
            });
            t.Name = name;
            t.IsBackground = true;
            Interlocked.Increment(ref activeThreads);
            threads.RemoveAll(x => !x.IsAlive);
            threads.Add(t);
            t.Start();
            return t;
        }

        /// <summary>Queues a handler call: for the event thread, or for DispatchPending. mu held.</summary>
        void Emit(Action a)
        {
            events.Enqueue(a);
            Monitor.PulseAll(mu);
        }

        void Run(Action a)
        {
            try { a(); }
            catch (Exception e)
            {
                var h = o.OnError;
                try
                {
                    if (h != null) h(e);
                    else Console.Error.WriteLine("Shield: a handler threw: " + e);
                }
                catch (Exception) { }
            }
        }

        void EventLoop()
        {
            for (;;)
            {
                Action a;
                lock (mu)
                {
                    while (events.Count == 0)
                    {
                        if (state == ClientState.Closed) return;
                        Monitor.Wait(mu, 1000);
                    }
                    a = events.Dequeue();
                }
                Run(a);
            }
        }
    }
}
