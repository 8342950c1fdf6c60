// Calls per second of one ShieldClient connection: P calls in flight at a
// time on the echo route (clients/ts/bench/echo.yaml), for a fixed time
// after a warm-up; one JSON line as clients/ts/bench/calls.mjs prints.
//
//   mono tests.exe --bench tcp://127.0.0.1:7400 16 5
using System;
using System.Diagnostics;
using System.Linq;
using System.Threading;
using System.Threading.Tasks;

namespace Shield.Tests
{
    /// <summary>The benchmark.</summary>
    public static class Bench
    {
        /// <summary>Runs it: --bench URL P SECONDS.</summary>
        public static int Run(string[] args)
        {
            string url = args.Length > 1 ? args[1] : "tcp://127.0.0.1:7400";
            int p = args.Length > 2 ? int.Parse(args[2]) : 1;
            double secs = args.Length > 3 ? double.Parse(args[3]) : 5;
            var o = new ClientOptions { HeartbeatMs = 0, CallTimeoutMs = 10000, Reconnect = null };
            using (var c = ShieldClient.ConnectAsync(url, o).Result)
            {
                Func<int, long> run = ms =>
                {
                    long calls = 0;
                    var sw = Stopwatch.StartNew();
                    var workers = Enumerable.Range(0, p).Select(_ => Task.Run(async () =>
                    {
                        while (sw.ElapsedMilliseconds < ms)
                        {
                            await c.CallAsync(1, "{\"n\":1,\"text\":\"hello\"}").ConfigureAwait(false);
                            Interlocked.Increment(ref calls);
                        }
                    })).ToArray();
                    if (!Task.WaitAll(workers, ms + 20000)) throw new TimeoutException("bench workers did not finish");
                    return calls;
                };
                run(1000); // warm-up: JIT, socket buffers
                var start = Stopwatch.StartNew();
                long n = run((int)(secs * 1000));
                double el = start.Elapsed.TotalSeconds;
                Console.WriteLine("{\"client\":\"cs\",\"url\":\"" + url + "\",\"p\":" + p + ",\"calls\":" + n + ",\"seconds\":" +
                    el.ToString("0.00", System.Globalization.CultureInfo.InvariantCulture) + ",\"per_second\":" + Math.Round(n / el) + "}");
            }
            return 0;
        }
    }
}
