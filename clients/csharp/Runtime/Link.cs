// The connection side of ShieldClient: the reader of each link, frames,
// notices and status frames, drops, the supervisor's heartbeats and
// reconnects with resume, and the final close.
using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.Threading;

namespace Shield
{
    public sealed partial class ShieldClient
    {
        /// <summary>The notices of docs/protocol.md §6: the gateway closes the session right after.</summary>
        public static readonly HashSet<string> NoticeCodes = new HashSet<string>
        {
            "session.kicked", "session.idle_timeout", "session.rate_limited", "session.auth_timeout", "session.target_lost", "gateway.draining",
        };

        static readonly Stopwatch clock = Stopwatch.StartNew();

        static long Now() { return clock.ElapsedMilliseconds; }

        /// <summary>Makes conn the current link and starts its reader; mu held.</summary>
        void StartLink(Connection conn)
        {
            var l = new Link { Conn = conn };
            link = l;
            l.Reader = Start("Shield reader", () => ReadLoop(l));
            Monitor.PulseAll(mu);
        }

        void ReadLoop(Link l)
        {
            var frames = new List<InFrame>();
            try
            {
                for (;;)
                {
                    frames.Clear();
                    if (!l.Conn.Read(frames))
                    {
                        Drop(l, null);
                        return;
                    }
                    foreach (var f in frames)
                        if (!HandleFrame(l, f)) return;
                }
            }
            catch (ShieldProtocolException e)
            {
                if (e.Reason == "truncated") Drop(l, e);
                else Broken(l, e);
            }
            catch (Exception e)
            {
                Drop(l, e);
            }
        }

        /// <summary>Handles one frame; false when the link is no longer current.</summary>
        bool HandleFrame(Link l, InFrame f)
        {
            Pending p = null;
            lock (mu)
            {
                if (l != link || l.Dead) return false;
                l.Rx++;
                switch (f.Kind)
                {
                    case FrameKind.Heartbeat:
                        return true;
                    case FrameKind.Response:
                    case FrameKind.Error:
                        // Unknown ids are late answers: timed out, cancelled, or
                        // owed to a call of a connection that dropped.
                        if (!pending.TryGetValue(f.RequestId, out p)) return true;
                        pending.Remove(f.RequestId);
                        break;
                    case FrameKind.Push:
                        var push = new Push { RouteId = f.RouteId, Body = f.Body };
                        List<Action<Push>> hs;
                        if (pushHandlers.TryGetValue(f.RouteId, out hs))
                        {
                            var copy = hs.ToArray();
                            Emit(() => { foreach (var h in copy) Run(() => h(push)); });
                        }
                        else Emit(() => { var h = AnyPush; if (h != null) h(push); });
                        return true;
                    case FrameKind.Notice:
                        OnNotice(l, f);
                        return true;
                }
            }
            Release(p);
            if (f.Kind == FrameKind.Error)
                p.Tcs.TrySetException(new ShieldException(f.Code, f.Message, f.RouteId != 0 ? f.RouteId : p.Route, f.RetryAfterMs));
            else
                p.Tcs.TrySetResult(f.Body);
            return true;
        }

        /// <summary>A notice or a status frame; mu held.</summary>
        void OnNotice(Link l, InFrame f)
        {
            if (NoticeCodes.Contains(f.Code))
            {
                l.Notice = new Notice { Code = f.Code, Message = f.Message, RetryAfterMs = f.RetryAfterMs };
                // The session is over unless the gateway may have suspended it.
                l.SessionOver = !(f.Code == "session.idle_timeout" && token != null);
                string code = f.Code, msg = f.Message;
                Emit(() => { var h = Notice; if (h != null) h(code, msg); });
                return;
            }
            var st = new StatusFrame { Code = f.Code, Fields = f.Fields, Message = f.Message };
            switch (f.Code)
            {
                case "session.resume_token":
                case "session.resumed":
                    st.Token = Json.JsonValue.Get(f.Fields, "token") as string;
                    if (string.IsNullOrEmpty(st.Token)) throw new ShieldProtocolException("bad_system_frame", f.Code + " status without a valid token");
                    token = st.Token;
                    break;
                case "session.resume_failed":
                    token = null;
                    break;
                case "gateway.drain_started":
                    object g = Json.JsonValue.Get(f.Fields, "grace_ms");
                    if (!(g is double) || (double)g < 0) throw new ShieldProtocolException("bad_system_frame", f.Code + " status without a valid grace_ms");
                    st.GraceMs = Json.JsonValue.AsLong(g);
                    st.RetryAfterMs = f.RetryAfterMs;
                    break;
                default:
                    return; // a status this client does not know: ignored (docs/protocol.md §6)
            }
            Emit(() => { var h = Status; if (h != null) h(st); });
            if (state == ClientState.Resuming)
            {
                if (f.Code == "session.resumed") Reconnected_(new ReconnectInfo { Resumed = true, Attempt = attempt });
                else if (f.Code == "session.resume_failed") Reconnected_(new ReconnectInfo { Resumed = false, Attempt = attempt, Message = f.Message });
            }
        }

        /// <summary>The reconnect is done; mu held. Frames that follow are handled after the app's handler has run.</summary>
        void Reconnected_(ReconnectInfo info)
        {
            state = ClientState.Open;
            attempt = 0;
            Emit(() => { var h = Reconnected; if (h != null) h(info); });
            Monitor.PulseAll(mu);
        }

        /// <summary>A malformed frame: the stream cannot be trusted, and a reconnect would likely meet the same bug. The client closes.</summary>
        void Broken(Link l, ShieldProtocolException e)
        {
            lock (mu)
            {
                if (l != link || l.Dead) return;
                l.Dead = true;
                l.Conn.Dispose();
                FinishLocked(e);
            }
        }

        /// <summary>A link ended or is given up (EOF, a write that failed, a dead heartbeat, a resume unanswered): its calls fail, then a reconnect or the close.</summary>
        void Drop(Link l, Exception cause)
        {
            lock (mu)
            {
                if (l != link || l.Dead) return;
                l.Dead = true;
                l.Conn.Dispose();
                string msg = l.Notice != null
                    ? "the gateway closed the session (" + l.Notice.Code + ": " + l.Notice.Message + ")"
                    : cause != null ? "the connection ended: " + cause.Message : "the connection closed";
                var closed = new ShieldClosedException(msg, cause, l.Notice);
                bool wasOpen = state == ClientState.Open;
                FailPending(closed);
                bool reconnecting = o.Reconnect != null && !l.SessionOver && state != ClientState.Connecting && state != ClientState.Closed;
                if (wasOpen)
                {
                    var info = new DisconnectInfo { Error = closed, Reconnecting = reconnecting };
                    Emit(() => { var h = Disconnected; if (h != null) h(info); });
                }
                if (!reconnecting) FinishLocked(closed);
                else ScheduleReconnect(closed);
            }
        }

        /// <summary>Frames received on the current connection (tests).</summary>
        internal long FramesReceived { get { lock (mu) return link == null ? 0 : link.Rx; } }

        /// <summary>Drops the current link as if the network had failed (tests: a flap).</summary>
        internal void DropForTest()
        {
            Link l;
            lock (mu) l = link;
            if (l != null) Drop(l, new System.IO.IOException("dropped by the test"));
        }

        /// <summary>mu held.</summary>
        void ScheduleReconnect(Exception lastError)
        {
            state = ClientState.Reconnecting;
            attempt++;
            if (attempt > o.Reconnect.Attempts)
            {
                FinishLocked(new ShieldClosedException("gave up reconnecting after " + o.Reconnect.Attempts + " attempts", lastError));
                return;
            }
            retryAt = Now() + o.Reconnect.Delay(attempt, random.NextDouble());
            Monitor.PulseAll(mu);
        }

        /// <summary>The supervisor thread: heartbeats, reconnects, the resume's timeout.</summary>
        void Supervise()
        {
            Link beatLink = null;
            long beatAt = -1, nextBeat = 0;
            int hb = o.HeartbeatMs;
            for (;;)
            {
                Action todo = null;
                lock (mu)
                {
                    if (state == ClientState.Closed) return;
                    long now = Now(), wake = now + 1000;
                    if (state == ClientState.Reconnecting)
                    {
                        if (now >= retryAt) { retryAt = long.MaxValue; todo = TryReconnect; }
                        else wake = Math.Min(wake, retryAt);
                    }
                    else if (state == ClientState.Resuming)
                    {
                        var l = link;
                        if (now >= resumeBy) todo = () => Drop(l, new ShieldTimeoutException("no answer to the resume within " + o.ConnectTimeoutMs + " ms"));
                        else wake = Math.Min(wake, resumeBy);
                    }
                    else if (state == ClientState.Open && hb > 0 && link != null && !link.Dead)
                    {
                        var l = link;
                        if (l != beatLink) { beatLink = l; beatAt = -1; nextBeat = now + hb; }
                        if (now >= nextBeat)
                        {
                            nextBeat = now + hb;
                            if (beatAt == l.Rx) todo = () => Drop(l, new ShieldTimeoutException("no frame from the gateway for " + hb + " ms after a heartbeat"));
                            else { beatAt = l.Rx; todo = () => Write(l, Codec.Heartbeat(o.Envelope)); }
                        }
                        wake = Math.Min(wake, nextBeat);
                    }
                    if (todo == null) Monitor.Wait(mu, (int)Math.Max(1, wake - now));
                }
                if (todo != null) todo();
            }
        }

        /// <summary>One reconnect attempt (on the supervisor thread).</summary>
        void TryReconnect()
        {
            Connection conn;
            try
            {
                conn = Connection.Dial(url, o.Envelope, o.MaxFrameBytes, o.ConnectTimeoutMs, closing.Token);
            }
            catch (Exception e)
            {
                lock (mu)
                    if (state != ClientState.Closed) ScheduleReconnect(e);
                return;
            }
            lock (mu)
            {
                if (state == ClientState.Closed)
                {
                    conn.Dispose();
                    return;
                }
                if (token == null)
                {
                    StartLink(conn);
                    Reconnected_(new ReconnectInfo { Resumed = false, Attempt = attempt });
                    return;
                }
                // The resume is the connection's first frame; nothing else is
                // sent until its answer.
                try
                {
                    conn.Send(Codec.Heartbeat(o.Envelope, token));
                }
                catch (Exception e)
                {
                    conn.Dispose();
                    ScheduleReconnect(e);
                    return;
                }
                state = ClientState.Resuming;
                resumeBy = Now() + o.ConnectTimeoutMs;
                StartLink(conn);
            }
        }

        void Finish(Exception err)
        {
            lock (mu) FinishLocked(err);
        }

        /// <summary>Closes for good, once: the link, pending calls, then the Closed handlers. mu held.</summary>
        void FinishLocked(Exception err)
        {
            if (state == ClientState.Closed) return;
            state = ClientState.Closed;
            closeError = err;
            try { closing.Cancel(); } catch (Exception) { }
            if (link != null && !link.Dead)
            {
                link.Dead = true;
                link.Conn.Dispose();
            }
            var closed = err as ShieldClosedException;
            FailPending(err == null ? new ShieldClosedException("the client was closed")
                : closed != null ? (Exception)closed : new ShieldClosedException("the connection failed: " + err.Message, err));
            Emit(() => { var h = Closed; if (h != null) h(err); });
            Monitor.PulseAll(mu);
        }
    }
}
