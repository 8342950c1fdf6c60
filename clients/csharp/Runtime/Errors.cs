using System;

namespace Shield
{
    /// <summary>An error frame from the gateway: the request's one answer was a failure.</summary>
    public sealed class ShieldException : Exception
    {
        /// <summary>The gateway's or the service's code, e.g. <c>client_rpc.busy</c> or <c>player.not_in_room</c>.</summary>
        public string Code { get; private set; }
        /// <summary>The route_id of the request.</summary>
        public int RouteId { get; private set; }
        /// <summary>The error's retry_after_ms: wait this long before trying again; 0 when it has none.</summary>
        public long RetryAfterMs { get; private set; }

        /// <summary>Makes the error of an error frame.</summary>
        public ShieldException(string code, string message, int routeId, long retryAfterMs) : base(message)
        {
            Code = code;
            RouteId = routeId;
            RetryAfterMs = retryAfterMs;
        }

        /// <inheritdoc/>
        public override string ToString() { return Code + ": " + Message; }
    }

    /// <summary>A call that got no answer within its timeout, or a connect or resume that took too long.</summary>
    public sealed class ShieldTimeoutException : TimeoutException
    {
        /// <summary>Makes the exception.</summary>
        public ShieldTimeoutException(string message) : base(message) { }
    }

    /// <summary>A notice as the gateway sent it just before it closed the session.</summary>
    public sealed class Notice
    {
        /// <summary>session.kicked, gateway.draining, ...</summary>
        public string Code;
        /// <summary>The gateway's message.</summary>
        public string Message;
        /// <summary>When to connect again, if the notice says (a drained session's gateway.draining); 0 otherwise.</summary>
        public long RetryAfterMs;
    }

    /// <summary>
    /// The connection is not open: it closed while a call was pending, or a
    /// call was made while the client was reconnecting or closed.
    /// InnerException is why the connection ended, when known; Notice is the
    /// gateway's notice when one came first.
    /// </summary>
    public sealed class ShieldClosedException : Exception
    {
        /// <summary>The notice that ended the session, or null.</summary>
        public Notice Notice { get; private set; }

        /// <summary>Makes the exception.</summary>
        public ShieldClosedException(string message, Exception cause = null, Notice notice = null) : base(message, cause)
        {
            Notice = notice;
        }
    }

    /// <summary>
    /// A malformed frame from the gateway. The client closes the connection,
    /// does not reconnect, and passes this error to the Closed handlers.
    /// Reason is one of bad_version, too_large, too_short, bad_system_frame,
    /// bad_type, truncated, websocket.
    /// </summary>
    public sealed class ShieldProtocolException : Exception
    {
        /// <summary>Why the frame could not be read.</summary>
        public string Reason { get; private set; }

        /// <summary>Makes the exception.</summary>
        public ShieldProtocolException(string reason, string message) : base(reason + ": " + message)
        {
            Reason = reason;
        }
    }
}
