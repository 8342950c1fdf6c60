// The transports: TCP (optionally TLS) carrying the envelope's frames with
// their u32 lengths, and WebSocket (ws://, wss://) carrying one frame per
// binary message. Both are blocking underneath: the client reads each
// connection on a thread of its own and writes from the caller's thread.
using System;
using System.Collections.Generic;
using System.IO;
using System.Net.Security;
using System.Net.Sockets;
using System.Net.WebSockets;
using System.Threading;
using System.Threading.Tasks;

namespace Shield
{
    /// <summary>
    /// One open connection to a gateway listener. Send may be called from
    /// any thread; Read from one thread at a time. Dispose closes it and
    /// makes a blocked Read return.
    /// </summary>
    public abstract class Connection : IDisposable
    {
        /// <summary>Sends messages (frames without their length) back to back, nothing between them. Throws IOException when the connection is broken.</summary>
        public abstract void Send(params byte[][] messages);

        /// <summary>Blocks until frames arrive and appends them to into; false at the end of the connection. Throws ShieldProtocolException for a malformed frame, IOException for a broken connection.</summary>
        public abstract bool Read(List<InFrame> into);

        /// <summary>Closes the connection at once.</summary>
        public abstract void Dispose();

        /// <summary>
        /// Opens a connection to url: tcp://host:port, tls://host:port,
        /// ws://host:port/path or wss://host:port/path, within timeoutMs (or
        /// until ct is cancelled).
        /// </summary>
        public static Connection Dial(Uri url, Envelope env, int maxFrameBytes, int timeoutMs, CancellationToken ct)
        {
            switch (url.Scheme)
            {
                case "tcp":
                case "tls":
                    return TcpConnection.Open(url, env, maxFrameBytes, timeoutMs, ct);
                case "ws":
                case "wss":
                    return WsConnection.Open(url, env, maxFrameBytes, timeoutMs, ct);
                default:
                    throw new ArgumentException("unknown scheme " + url.Scheme + " (want tcp, tls, ws or wss)");
            }
        }

        /// <summary>Waits for t within timeoutMs or until ct is cancelled; throws ShieldTimeoutException or OperationCanceledException.</summary>
        internal static void Await(Task t, int timeoutMs, CancellationToken ct, string what)
        {
            try
            {
                if (!t.Wait(timeoutMs, ct)) throw new ShieldTimeoutException(what + " took longer than " + timeoutMs + " ms");
            }
            catch (AggregateException e)
            {
                throw new IOException(what + " failed: " + e.InnerException.Message, e.InnerException);
            }
        }
    }

    sealed class TcpConnection : Connection
    {
        readonly TcpClient tcp;
        readonly Stream stream;
        readonly StreamDecoder decoder;
        readonly byte[] rbuf = new byte[16384];
        readonly object wlock = new object();

        TcpConnection(TcpClient tcp, Stream stream, Envelope env, int max)
        {
            this.tcp = tcp;
            this.stream = stream;
            decoder = new StreamDecoder(env, max);
        }

        public static Connection Open(Uri url, Envelope env, int max, int timeoutMs, CancellationToken ct)
        {
            var tcp = new TcpClient();
            try
            {
                tcp.NoDelay = true;
                tcp.SendTimeout = 10000;
                using (ct.Register(() => tcp.Close()))
                    Await(tcp.ConnectAsync(url.Host, url.Port), timeoutMs, ct, "connect to " + url.Authority);
                Stream s = tcp.GetStream();
                if (url.Scheme == "tls")
                {
                    var ssl = new SslStream(s, false);
                    Await(ssl.AuthenticateAsClientAsync(url.Host), timeoutMs, ct, "TLS handshake with " + url.Authority);
                    s = ssl;
                }
                return new TcpConnection(tcp, s, env, max);
            }
            catch
            {
                tcp.Close();
                throw;
            }
        }

        public override void Send(params byte[][] messages)
        {
            int n = 0;
            foreach (var m in messages) n += 4 + m.Length;
            var buf = new byte[n];
            int at = 0;
            foreach (var m in messages)
            {
                Codec.PutU32(buf, at, (uint)m.Length);
                Buffer.BlockCopy(m, 0, buf, at + 4, m.Length);
                at += 4 + m.Length;
            }
            try
            {
                lock (wlock) stream.Write(buf, 0, buf.Length);
            }
            catch (ObjectDisposedException e)
            {
                throw new IOException("the connection is closed", e);
            }
        }

        public override bool Read(List<InFrame> into)
        {
            int n;
            try { n = stream.Read(rbuf, 0, rbuf.Length); }
            catch (ObjectDisposedException e) { throw new IOException("the connection is closed", e); }
            if (n <= 0)
            {
                var end = decoder.End();
                if (end != null) throw end;
                return false;
            }
            decoder.Push(rbuf, n, into);
            return true;
        }

        public override void Dispose()
        {
            try { tcp.Client.Shutdown(SocketShutdown.Both); } catch (Exception) { }
            tcp.Close();
        }
    }

    sealed class WsConnection : Connection
    {
        readonly ClientWebSocket ws;
        readonly Envelope env;
        readonly int max;
        readonly byte[] rbuf;
        readonly object wlock = new object();
        readonly CancellationTokenSource stop = new CancellationTokenSource();

        WsConnection(ClientWebSocket ws, Envelope env, int max)
        {
            this.ws = ws;
            this.env = env;
            this.max = max;
            rbuf = new byte[max + 1];
        }

        public static Connection Open(Uri url, Envelope env, int max, int timeoutMs, CancellationToken ct)
        {
            var ws = new ClientWebSocket();
            try
            {
                using (var cts = CancellationTokenSource.CreateLinkedTokenSource(ct))
                {
                    cts.CancelAfter(timeoutMs);
                    try
                    {
                        Await(ws.ConnectAsync(url, cts.Token), timeoutMs + 1000, ct, "WebSocket connect to " + url);
                    }
                    catch (IOException) when (cts.IsCancellationRequested && !ct.IsCancellationRequested)
                    {
                        throw new ShieldTimeoutException("WebSocket connect to " + url + " took longer than " + timeoutMs + " ms");
                    }
                }
                return new WsConnection(ws, env, max);
            }
            catch
            {
                ws.Dispose();
                throw;
            }
        }

        // Sends are queued and written by one asynchronous pump, never
        // waited for by the caller: a thread that blocked on each SendAsync
        // would starve the thread pool that completes them (Mono's
        // ClientWebSocket) when many calls are in flight. A send that fails
        // aborts the socket, so that the reader sees the end of the
        // connection.
        readonly Queue<byte[]> outbox = new Queue<byte[]>();
        bool pumping;

        public override void Send(params byte[][] messages)
        {
            if (ws.State != WebSocketState.Open) throw new IOException("the WebSocket is " + ws.State);
            lock (wlock)
            {
                if (outbox.Count > 4096) throw new IOException("more than 4096 WebSocket messages waiting to be sent");
                foreach (var m in messages) outbox.Enqueue(m);
                if (pumping) return;
                pumping = true;
            }
            Task.Run(Pump);
        }

        async Task Pump()
        {
            try
            {
                for (;;)
                {
                    byte[] m;
                    lock (wlock)
                    {
                        if (outbox.Count == 0) { pumping = false; return; }
                        m = outbox.Dequeue();
                    }
                    await ws.SendAsync(new ArraySegment<byte>(m), WebSocketMessageType.Binary, true, stop.Token).ConfigureAwait(false);
                }
            }
            catch (Exception)
            {
                lock (wlock) { pumping = false; outbox.Clear(); }
                Dispose();
            }
        }

        public override bool Read(List<InFrame> into)
        {
            int n = 0;
            for (;;)
            {
                WebSocketReceiveResult r;
                try
                {
                    r = ws.ReceiveAsync(new ArraySegment<byte>(rbuf, n, rbuf.Length - n), stop.Token).GetAwaiter().GetResult();
                }
                catch (OperationCanceledException e) { throw new IOException("the connection is closed", e); }
                catch (ObjectDisposedException e) { throw new IOException("the connection is closed", e); }
                catch (WebSocketException e) { throw new IOException("WebSocket: " + e.Message, e); }
                if (r.MessageType == WebSocketMessageType.Close) return false;
                if (r.MessageType == WebSocketMessageType.Text)
                    throw new ShieldProtocolException("bad_type", "text message on the " + env + " envelope");
                n += r.Count;
                if (n > max) throw new ShieldProtocolException("too_large", "message above max_frame_bytes " + max);
                if (r.EndOfMessage) break;
            }
            into.Add(Codec.Decode(env, rbuf, 0, n, max));
            return true;
        }

        int disposed;

        public override void Dispose()
        {
            if (Interlocked.Exchange(ref disposed, 1) != 0) return;
            try { stop.Cancel(); } catch (ObjectDisposedException) { }
            try { ws.Abort(); } catch (Exception) { }
            ws.Dispose();
        }
    }
}
