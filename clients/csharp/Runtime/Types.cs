using System;
using System.Collections.Generic;
using System.Text;

namespace Shield
{
    /// <summary>Reconnect policy: exponential backoff with jitter.</summary>
    public sealed class ReconnectOptions
    {
        /// <summary>The first delay in ms, doubled after each failed attempt. Default 250.</summary>
        public int BaseMs = 250;
        /// <summary>The largest delay in ms. Default 10000.</summary>
        public int MaxMs = 10000;
        /// <summary>Attempts after one drop before the client gives up and closes. Default 10.</summary>
        public int Attempts = 10;
        /// <summary>The part of each delay (0..1) taken off at random. Default 0.5: a delay of d waits d/2..d.</summary>
        public double Jitter = 0.5;

        /// <summary>The delay before reconnect attempt n (from 1), with random a number in [0, 1).</summary>
        public int Delay(int attempt, double random)
        {
            double exp = Math.Min(MaxMs, BaseMs * Math.Pow(2, Math.Min(attempt - 1, 30)));
            return (int)(exp * (1 - Math.Min(1, Math.Max(0, Jitter)) * random));
        }
    }

    /// <summary>How a client connects and behaves.</summary>
    public sealed class ClientOptions
    {
        /// <summary>The listener's protocol.envelope. Default idlen.</summary>
        public Envelope Envelope = Envelope.Idlen;
        /// <summary>The listener's max_frame_bytes (header plus body): a larger frame from the gateway closes the connection, a larger one is not sent. Default 65536.</summary>
        public int MaxFrameBytes = 65536;
        /// <summary>Interval of heartbeats in ms; 0: none. A connection silent for a whole interval after a heartbeat is taken as dropped. Default 15000.</summary>
        public int HeartbeatMs = 15000;
        /// <summary>Default timeout of a call in ms; 0: none. Default 30000.</summary>
        public int CallTimeoutMs = 30000;
        /// <summary>Time allowed to open a connection and, on reconnect, to get the answer to a resume. Default 10000.</summary>
        public int ConnectTimeoutMs = 10000;
        /// <summary>Declare each call's timeout to the gateway as the request's budget (docs/protocol.md §11). Default false: an older gateway closes the connection on it.</summary>
        public bool DeclareDeadlines;
        /// <summary>Reconnect after a drop; null: never. Default: on, with ReconnectOptions' defaults.</summary>
        public ReconnectOptions Reconnect = new ReconnectOptions();
        /// <summary>
        /// false (the default, for plain .NET): handlers run on the client's
        /// event thread, one at a time, in the order the frames came. true
        /// (Unity): handlers are queued until the game calls
        /// ShieldClient.DispatchPending, typically from a MonoBehaviour's
        /// Update(), so that they run on the main thread.
        /// </summary>
        public bool UseDispatcher;
        /// <summary>Receives exceptions thrown by the app's handlers; without it they are written to Console.Error.</summary>
        public Action<Exception> OnError;
    }

    /// <summary>The client's state.</summary>
    public enum ClientState
    {
        /// <summary>The first connect.</summary>
        Connecting,
        /// <summary>Calls may be made.</summary>
        Open,
        /// <summary>Waiting or dialling after a drop.</summary>
        Reconnecting,
        /// <summary>Reconnected, the resume frame sent, its answer not yet in.</summary>
        Resuming,
        /// <summary>For good.</summary>
        Closed,
    }

    /// <summary>A push from the gateway.</summary>
    public sealed class Push
    {
        /// <summary>The push's route_id.</summary>
        public int RouteId;
        /// <summary>The body's bytes (empty when none).</summary>
        public byte[] Body;

        /// <summary>The body as UTF-8 text (JSON with the json body codec).</summary>
        public string Text { get { return Encoding.UTF8.GetString(Body); } }
    }

    /// <summary>
    /// A status frame the client knows (the session goes on):
    /// session.resume_token and session.resumed (Token),
    /// session.resume_failed (Message), gateway.drain_started (GraceMs,
    /// RetryAfterMs). Codes the client does not know are ignored.
    /// </summary>
    public sealed class StatusFrame
    {
        /// <summary>The status code.</summary>
        public string Code;
        /// <summary>The resume token of session.resume_token and session.resumed.</summary>
        public string Token;
        /// <summary>The message of session.resume_failed.</summary>
        public string Message;
        /// <summary>gateway.drain_started's grace_ms.</summary>
        public long GraceMs;
        /// <summary>gateway.drain_started's retry_after_ms (0: none).</summary>
        public long RetryAfterMs;
        /// <summary>The whole status body.</summary>
        public Dictionary<string, object> Fields;
    }

    /// <summary>How a reconnect went.</summary>
    public sealed class ReconnectInfo
    {
        /// <summary>
        /// true: the gateway resumed the session: the player is still logged
        /// in, and the pushes queued meanwhile are delivered after this
        /// handler has returned, in order. false: a new session (the resume
        /// failed, or no token was held): log in again.
        /// </summary>
        public bool Resumed;
        /// <summary>Which attempt succeeded, from 1.</summary>
        public int Attempt;
        /// <summary>The gateway's message with session.resume_failed.</summary>
        public string Message;
    }

    /// <summary>The open connection ended; its pending calls have failed.</summary>
    public sealed class DisconnectInfo
    {
        /// <summary>Why.</summary>
        public ShieldClosedException Error;
        /// <summary>Whether the client will try to reconnect.</summary>
        public bool Reconnecting;
    }
}
