// The test program's runner: each test runs in turn within a time limit;
// details go to stderr and stdout gets exactly one line, "N passed, N failed".
using System;
using System.Collections.Generic;
using System.IO;
using System.Net;
using System.Net.Sockets;
using System.Text;
using System.Threading;
using System.Threading.Tasks;

namespace Shield.Tests
{
    /// <summary>A failed check.</summary>
    public sealed class CheckFailed : Exception
    {
        /// <summary>Makes the failure.</summary>
        public CheckFailed(string m) : base(m) { }
    }

    /// <summary>Checks and waits, all bounded.</summary>
    public static class T
    {
        /// <summary>Fails unless ok.</summary>
        public static void Ok(bool ok, string what) { if (!ok) throw new CheckFailed(what); }

        /// <summary>Fails unless got equals want.</summary>
        public static void Eq<X>(X got, X want, string what)
        {
            if (!EqualityComparer<X>.Default.Equals(got, want)) throw new CheckFailed(what + ": got " + got + ", want " + want);
        }

        /// <summary>Waits until cond holds, polling, at most ms.</summary>
        public static void Until(Func<bool> cond, int ms, string what)
        {
            var end = DateTime.UtcNow.AddMilliseconds(ms);
            while (!cond())
            {
                if (DateTime.UtcNow > end) throw new CheckFailed("timed out waiting for " + what);
                Thread.Sleep(5);
            }
        }

        /// <summary>The exception t fails with (unwrapped), within ms; fails when it succeeds.</summary>
        public static Exception Fails(Task t, int ms, string what)
        {
            try
            {
                if (!t.Wait(ms)) throw new CheckFailed(what + ": still running after " + ms + " ms");
            }
            catch (AggregateException e)
            {
                return e.InnerException;
            }
            throw new CheckFailed(what + ": succeeded");
        }

        /// <summary>The result of t within ms.</summary>
        public static R Get<R>(Task<R> t, int ms, string what)
        {
            try
            {
                if (!t.Wait(ms)) throw new CheckFailed(what + ": no result within " + ms + " ms");
            }
            catch (AggregateException e)
            {
                throw new CheckFailed(what + ": " + e.InnerException.GetType().Name + ": " + e.InnerException.Message);
            }
            return t.Result;
        }

        /// <summary>Bytes as lower-case hex.</summary>
        public static string Hex(byte[] b) { return BitConverter.ToString(b).Replace("-", "").ToLowerInvariant(); }

        /// <summary>Hex (spaces allowed) as bytes.</summary>
        public static byte[] Unhex(string h)
        {
            h = h.Replace(" ", "");
            var o = new byte[h.Length / 2];
            for (int i = 0; i < o.Length; i++) o[i] = Convert.ToByte(h.Substring(2 * i, 2), 16);
            return o;
        }
    }

    /// <summary>A fake gateway on a loopback port: the test reads the client's frames and writes whatever bytes it likes.</summary>
    public sealed class FakeServer : IDisposable
    {
        readonly TcpListener listener = new TcpListener(IPAddress.Loopback, 0);
        readonly List<TcpClient> conns = new List<TcpClient>();

        /// <summary>Listens.</summary>
        public FakeServer() { listener.Start(); }

        /// <summary>tcp://127.0.0.1:port</summary>
        public string Url { get { return "tcp://127.0.0.1:" + ((IPEndPoint)listener.LocalEndpoint).Port; } }

        /// <summary>The next connection, within ms.</summary>
        public FakeConn Accept(int ms = 5000)
        {
            var t = listener.AcceptTcpClientAsync();
            if (!t.Wait(ms)) throw new CheckFailed("no connection within " + ms + " ms");
            lock (conns) conns.Add(t.Result);
            return new FakeConn(t.Result);
        }

        /// <summary>Whether a connection comes within ms.</summary>
        public bool Connects(int ms)
        {
            var t = listener.AcceptTcpClientAsync();
            if (!t.Wait(ms)) return false;
            lock (conns) conns.Add(t.Result);
            return true;
        }

        /// <summary>Stops listening and closes every connection.</summary>
        public void Dispose()
        {
            listener.Stop();
            lock (conns) foreach (var c in conns) c.Close();
        }
    }

    /// <summary>One connection to the fake gateway, idlen framing.</summary>
    public sealed class FakeConn
    {
        readonly TcpClient c;
        readonly NetworkStream s;

        /// <summary>Wraps an accepted connection.</summary>
        public FakeConn(TcpClient c)
        {
            this.c = c;
            s = c.GetStream();
            s.ReadTimeout = 5000;
        }

        /// <summary>The next frame's message (without its length), within the read timeout; null at EOF.</summary>
        public byte[] Next(int ms = 5000)
        {
            s.ReadTimeout = ms;
            var len = ReadN(4);
            if (len == null) return null;
            return ReadN((int)((uint)len[0] << 24 | (uint)len[1] << 16 | (uint)len[2] << 8 | len[3]));
        }

        /// <summary>Whether any byte arrives within ms (false: silence or EOF).</summary>
        public bool Hears(int ms)
        {
            s.ReadTimeout = ms;
            try { return s.ReadByte() >= 0; }
            catch (IOException) { return false; }
        }

        byte[] ReadN(int n)
        {
            var b = new byte[n];
            int at = 0;
            while (at < n)
            {
                int k = s.Read(b, at, n - at);
                if (k <= 0) return null;
                at += k;
            }
            return b;
        }

        /// <summary>Writes bytes as they are.</summary>
        public void Raw(byte[] b) { s.Write(b, 0, b.Length); }

        /// <summary>Writes an idlen frame.</summary>
        public void Frame(int route, uint rid, string body)
        {
            var bb = Encoding.UTF8.GetBytes(body ?? "");
            var m = new byte[8 + bb.Length];
            m[0] = 1;
            m[1] = (byte)(route >> 16); m[2] = (byte)(route >> 8); m[3] = (byte)route;
            m[4] = (byte)(rid >> 24); m[5] = (byte)(rid >> 16); m[6] = (byte)(rid >> 8); m[7] = (byte)rid;
            Buffer.BlockCopy(bb, 0, m, 8, bb.Length);
            Raw(Codec.Framed(m));
        }

        /// <summary>The request_id of an idlen message.</summary>
        public static uint Rid(byte[] m) { return (uint)(m[4] << 24 | m[5] << 16 | m[6] << 8 | m[7]); }

        /// <summary>The route_id of an idlen message.</summary>
        public static int Route(byte[] m) { return m[1] << 16 | m[2] << 8 | m[3]; }

        /// <summary>Closes at once.</summary>
        public void Close() { c.Close(); }
    }

    /// <summary>The entry point.</summary>
    public static class Program
    {
        /// <summary>--free-ports N prints N free loopback ports; otherwise runs the tests (SHIELD_* environment, see test.sh).</summary>
        public static int Main(string[] args)
        {
            if (args.Length == 2 && args[0] == "--free-ports")
            {
                var ls = new List<TcpListener>();
                for (int i = 0; i < int.Parse(args[1]); i++)
                {
                    var l = new TcpListener(IPAddress.Loopback, 0);
                    l.Start();
                    ls.Add(l);
                }
                foreach (var l in ls) Console.WriteLine(((IPEndPoint)l.LocalEndpoint).Port);
                foreach (var l in ls) l.Stop();
                return 0;
            }
            if (args.Length >= 1 && args[0] == "--bench") return Bench.Run(args);
            var stdout = Console.Out;
            Console.SetOut(Console.Error); // stdout: the summary line only
            int passed = 0, failed = 0;
            string only = Environment.GetEnvironmentVariable("SHIELD_TEST_RUN");
            foreach (var t in Cases.All())
            {
                if (!string.IsNullOrEmpty(only) && !t.Key.Contains(only)) continue;
                var start = DateTime.UtcNow;
                string err = null;
                try
                {
                    var task = Task.Run(t.Value);
                    if (!task.Wait(60000)) err = "timed out after 60 s";
                }
                catch (AggregateException e)
                {
                    err = e.InnerException is CheckFailed ? e.InnerException.Message : e.InnerException.ToString();
                }
                int ms = (int)(DateTime.UtcNow - start).TotalMilliseconds;
                if (err == null) { passed++; Console.Error.WriteLine("ok   " + t.Key + " (" + ms + " ms)"); }
                else { failed++; Console.Error.WriteLine("FAIL " + t.Key + " (" + ms + " ms): " + err); }
            }
            stdout.WriteLine(passed + " passed, " + failed + " failed");
            stdout.Flush();
            return failed == 0 && passed > 0 ? 0 : 1;
        }
    }
}
