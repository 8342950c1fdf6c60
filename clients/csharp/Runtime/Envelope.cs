// The header envelopes of docs/protocol.md (§3 idlen, §4 typelen), client
// side: encoding what a client sends (request, notify, heartbeat, resume,
// deadline) and decoding what a gateway sends (response, push, error,
// notice/status, heartbeat echo). A "message" is one frame without its u32
// length, as one WebSocket message carries it; on TCP each message has the
// length in front. StreamDecoder splits a byte stream into messages,
// checking every limit before a frame's claimed size is buffered.
using System;
using System.Collections.Generic;
using System.Text;
using Shield.Json;

namespace Shield
{
    /// <summary>The listener's protocol.envelope; the legacy lenprefix and delimiter are not supported by this client.</summary>
    public enum Envelope
    {
        /// <summary>u24 route_id, u32 request_id; the default.</summary>
        Idlen,
        /// <summary>u8 type, u16 route_id, u64 request_id.</summary>
        Typelen,
    }

    /// <summary>The kind of a frame from the gateway.</summary>
    public enum FrameKind
    {
        /// <summary>The answer to a request.</summary>
        Response,
        /// <summary>A push on an s2c route.</summary>
        Push,
        /// <summary>An error answering a request.</summary>
        Error,
        /// <summary>A notice or a status frame (route 0, a JSON status body).</summary>
        Notice,
        /// <summary>A heartbeat's echo.</summary>
        Heartbeat,
    }

    /// <summary>One frame from the gateway, decoded.</summary>
    public sealed class InFrame
    {
        /// <summary>What it is.</summary>
        public FrameKind Kind;
        /// <summary>The route_id (0 on idlen's errors and on notices).</summary>
        public int RouteId;
        /// <summary>The request_id of a response or error.</summary>
        public ulong RequestId;
        /// <summary>A response's or push's body (empty when none).</summary>
        public byte[] Body;
        /// <summary>The code of an error or notice.</summary>
        public string Code;
        /// <summary>The message of an error or notice ("" when none).</summary>
        public string Message;
        /// <summary>An error's or notice's retry_after_ms (0: none).</summary>
        public long RetryAfterMs;
        /// <summary>The whole status body of an error or notice.</summary>
        public Dictionary<string, object> Fields;
    }

    /// <summary>Encoding and decoding of the idlen and typelen envelopes.</summary>
    public static class Codec
    {
        /// <summary>Header sizes after the u32 length.</summary>
        public const int IdlenHeaderSize = 8, TypelenHeaderSize = 12;
        /// <summary>The version byte.</summary>
        public const byte Version = 1;
        /// <summary>typelen's type byte.</summary>
        public const byte TypeRequest = 1, TypeResponse = 2, TypeError = 3, TypePush = 4, TypeHeartbeat = 5, TypeNotice = 6, TypeNotify = 7, TypeDeadline = 8;

        static readonly byte[] Empty = new byte[0];

        /// <summary>The header size of an envelope.</summary>
        public static int HeaderSize(Envelope env) { return env == Envelope.Idlen ? IdlenHeaderSize : TypelenHeaderSize; }

        /// <summary>The largest route_id of an envelope.</summary>
        public static int MaxRouteId(Envelope env) { return env == Envelope.Idlen ? 0xffffff : 0xffff; }

        /// <summary>The largest request_id this client uses on an envelope.</summary>
        public static ulong MaxRequestId(Envelope env) { return env == Envelope.Idlen ? 0xffffffffUL : long.MaxValue; }

        /// <summary>A request message. Throws ArgumentOutOfRangeException for a route or id the envelope cannot carry.</summary>
        public static byte[] Request(Envelope env, int route, ulong requestId, byte[] body)
        {
            CheckRoute(env, route);
            if (requestId == 0 || requestId > MaxRequestId(env)) throw new ArgumentOutOfRangeException("requestId");
            return Header(env, TypeRequest, route, requestId, body);
        }

        /// <summary>A notify message.</summary>
        public static byte[] Notify(Envelope env, int route, byte[] body)
        {
            CheckRoute(env, route);
            return Header(env, TypeNotify, route, 0, body);
        }

        /// <summary>A heartbeat message; with a token, the resume frame (docs/protocol.md §8).</summary>
        public static byte[] Heartbeat(Envelope env, string resumeToken = null)
        {
            byte[] body = Empty;
            if (resumeToken != null)
            {
                var b = new StringBuilder("{\"resume\":");
                JsonValue.Quote(b, resumeToken);
                body = Encoding.UTF8.GetBytes(b.Append('}').ToString());
            }
            return Header(env, TypeHeartbeat, 0, 0, body);
        }

        /// <summary>The deadline frame sent right before request requestId (docs/protocol.md §11).</summary>
        public static byte[] Deadline(Envelope env, ulong requestId, long deadlineMs)
        {
            if (deadlineMs < 1) throw new ArgumentOutOfRangeException("deadlineMs");
            return Header(env, TypeDeadline, 0, requestId, Encoding.UTF8.GetBytes("{\"deadline_ms\":" + deadlineMs + "}"));
        }

        static void CheckRoute(Envelope env, int route)
        {
            if (route < 1 || route > MaxRouteId(env))
                throw new ArgumentOutOfRangeException("route", env + ": route_id " + route + " outside 1.." + MaxRouteId(env));
        }

        static byte[] Header(Envelope env, byte type, int route, ulong rid, byte[] body)
        {
            body = body ?? Empty;
            if (env == Envelope.Idlen)
            {
                var o = new byte[IdlenHeaderSize + body.Length];
                o[0] = Version;
                o[1] = (byte)(route >> 16);
                o[2] = (byte)(route >> 8);
                o[3] = (byte)route;
                PutU32(o, 4, (uint)rid);
                Buffer.BlockCopy(body, 0, o, IdlenHeaderSize, body.Length);
                return o;
            }
            var t = new byte[TypelenHeaderSize + body.Length];
            t[0] = Version;
            t[1] = type;
            t[2] = (byte)(route >> 8);
            t[3] = (byte)route;
            PutU32(t, 4, (uint)(rid >> 32));
            PutU32(t, 8, (uint)rid);
            Buffer.BlockCopy(body, 0, t, TypelenHeaderSize, body.Length);
            return t;
        }

        /// <summary>A message with its u32 length in front, as TCP carries it.</summary>
        public static byte[] Framed(byte[] msg)
        {
            var o = new byte[4 + msg.Length];
            PutU32(o, 0, (uint)msg.Length);
            Buffer.BlockCopy(msg, 0, o, 4, msg.Length);
            return o;
        }

        internal static void PutU32(byte[] b, int at, uint v)
        {
            b[at] = (byte)(v >> 24);
            b[at + 1] = (byte)(v >> 16);
            b[at + 2] = (byte)(v >> 8);
            b[at + 3] = (byte)v;
        }

        internal static uint U32(byte[] b, int at)
        {
            return (uint)(b[at] << 24 | b[at + 1] << 16 | b[at + 2] << 8 | b[at + 3]);
        }

        /// <summary>
        /// Decodes one message (count bytes of buf from offset). Throws
        /// ShieldProtocolException for anything docs/protocol.md says closes
        /// the connection: a bad version, a size outside the limits, a kind
        /// a gateway may not send, a route 0 body that is not a JSON status
        /// object.
        /// </summary>
        public static InFrame Decode(Envelope env, byte[] buf, int offset, int count, int maxFrameBytes)
        {
            if (count > maxFrameBytes) throw new ShieldProtocolException("too_large", "message of " + count + " bytes above max_frame_bytes " + maxFrameBytes);
            int hs = HeaderSize(env);
            if (count < hs) throw new ShieldProtocolException("too_short", "message of " + count + " bytes below " + hs);
            if (buf[offset] != Version) throw new ShieldProtocolException("bad_version", env + " version " + buf[offset]);
            var body = new byte[count - hs];
            Buffer.BlockCopy(buf, offset + hs, body, 0, body.Length);
            if (env == Envelope.Idlen)
            {
                int route = buf[offset + 1] << 16 | buf[offset + 2] << 8 | buf[offset + 3];
                ulong rid = U32(buf, offset + 4);
                if (route != 0 && rid != 0) return new InFrame { Kind = FrameKind.Response, RouteId = route, RequestId = rid, Body = body };
                if (route != 0) return new InFrame { Kind = FrameKind.Push, RouteId = route, Body = body };
                if (rid != 0) return Status(FrameKind.Error, 0, rid, body);
                if (body.Length != 0) return Status(FrameKind.Notice, 0, 0, body);
                return new InFrame { Kind = FrameKind.Heartbeat, Body = body };
            }
            byte type = buf[offset + 1];
            int r = buf[offset + 2] << 8 | buf[offset + 3];
            ulong id = (ulong)U32(buf, offset + 4) << 32 | U32(buf, offset + 8);
            switch (type)
            {
                case TypeResponse: return new InFrame { Kind = FrameKind.Response, RouteId = r, RequestId = id, Body = body };
                case TypePush: return new InFrame { Kind = FrameKind.Push, RouteId = r, Body = body };
                case TypeError: return Status(FrameKind.Error, r, id, body);
                case TypeNotice: return Status(FrameKind.Notice, 0, 0, body);
                case TypeHeartbeat:
                    if (r != 0 || body.Length != 0)
                        throw new ShieldProtocolException("bad_system_frame", "heartbeat with route_id " + r + " and a " + body.Length + "-byte body");
                    return new InFrame { Kind = FrameKind.Heartbeat, Body = body };
                default:
                    throw new ShieldProtocolException("bad_type", "typelen type " + type + " from the gateway");
            }
        }

        /// <summary>An error's or notice's JSON status body: code and message strings when present, retry_after_ms a count.</summary>
        static InFrame Status(FrameKind kind, int route, ulong rid, byte[] body)
        {
            Dictionary<string, object> o = null;
            try { o = JsonValue.Parse(body) as Dictionary<string, object>; }
            catch (JsonException) { }
            if (o == null) throw new ShieldProtocolException("bad_system_frame", "status body is not a JSON object");
            object code = JsonValue.Get(o, "code"), msg = JsonValue.Get(o, "message"), retry = JsonValue.Get(o, "retry_after_ms");
            if (code != null && !(code is string)) throw new ShieldProtocolException("bad_system_frame", "\"code\" is not a string");
            if (msg != null && !(msg is string)) throw new ShieldProtocolException("bad_system_frame", "\"message\" is not a string");
            if (retry != null && (!(retry is double) || (double)retry < 0 || (double)retry != Math.Floor((double)retry)))
                throw new ShieldProtocolException("bad_system_frame", "\"retry_after_ms\" is not a whole number >= 0");
            return new InFrame
            {
                Kind = kind, RouteId = route, RequestId = rid, Body = body,
                Code = (string)code ?? "", Message = (string)msg ?? "", RetryAfterMs = JsonValue.AsLong(retry), Fields = o,
            };
        }
    }

    /// <summary>
    /// Splits a TCP byte stream into frames. Push returns the frames a chunk
    /// completes, or throws ShieldProtocolException; a length above
    /// max_frame_bytes fails as soon as it is seen, before the frame's
    /// bytes have arrived.
    /// </summary>
    public sealed class StreamDecoder
    {
        readonly Envelope env;
        readonly int max;
        byte[] buf = new byte[4096];
        int len;

        /// <summary>A decoder for an envelope and a max_frame_bytes.</summary>
        public StreamDecoder(Envelope env, int maxFrameBytes)
        {
            this.env = env;
            max = maxFrameBytes;
        }

        /// <summary>Bytes held of a frame not yet complete.</summary>
        public int Buffered { get { return len; } }

        /// <summary>Adds count bytes of chunk and appends the frames they complete to into.</summary>
        public void Push(byte[] chunk, int count, List<InFrame> into)
        {
            if (len + count > buf.Length)
            {
                var nb = new byte[Math.Max(buf.Length * 2, len + count)];
                Buffer.BlockCopy(buf, 0, nb, 0, len);
                buf = nb;
            }
            Buffer.BlockCopy(chunk, 0, buf, len, count);
            len += count;
            int pos = 0, min = Codec.HeaderSize(env);
            while (len - pos >= 4)
            {
                uint n = Codec.U32(buf, pos);
                if (n > max) throw new ShieldProtocolException("too_large", "length " + n + " above max_frame_bytes " + max);
                if (n < min) throw new ShieldProtocolException("too_short", "length " + n + " below " + min);
                if (len - pos > 4 && buf[pos + 4] != Codec.Version) throw new ShieldProtocolException("bad_version", env + " version " + buf[pos + 4]);
                if (len - pos - 4 < n) break;
                into.Add(Codec.Decode(env, buf, pos + 4, (int)n, max));
                pos += 4 + (int)n;
            }
            if (pos > 0)
            {
                Buffer.BlockCopy(buf, pos, buf, 0, len - pos);
                len -= pos;
            }
        }

        /// <summary>The error for an end of stream here: null at a frame boundary, truncated inside a frame.</summary>
        public ShieldProtocolException End()
        {
            return len == 0 ? null : new ShieldProtocolException("truncated", "EOF after " + len + " bytes of a frame");
        }
    }
}
