// The C# example of docs/clients.md, compiled and run by clients/csharp/test.sh
// against a real gateway; the test checks that the lines between the doc
// markers, less 12 spaces of indent, are the documentation's snippet.
using System;
using System.Threading;
using System.Threading.Tasks;
using Shield;
using Shield.Examples.Game;

namespace Shield.Examples
{
    /// <summary>Logs in, joins a room and moves, as docs/clients.md shows.</summary>
    public static class DocExample
    {
        /// <summary>Runs the example against the gateway at url (tcp://127.0.0.1:7000) as user; returns the room's member count.</summary>
        public static async Task<long> Run(string url, string user)
        {
            // doc:begin
            using (var client = await ShieldClient.ConnectAsync(url, new ClientOptions
            {
                Reconnect = new ReconnectOptions(), // see section 5
                UseDispatcher = false,              // Unity: true, and call client.DispatchPending() from Update()
            }))
            {
                var me = await client.LoginAsync(new LoginRequest { User = user });
                Console.WriteLine("logged in as " + me.PlayerId);
                var room = await client.JoinRoomAsync(new JoinRoomRequest { Room = "lobby" }); // room.Members >= 1
                client.OnPosition(p => Console.WriteLine(p.PlayerId + " at " + p.X + "," + p.Y));
                try
                {
                    await client.MoveAsync(new MoveRequest { X = 3, Y = 4 }, TimeSpan.FromSeconds(5));
                }
                catch (ShieldException e)
                {
                    Console.WriteLine(e.Code + ": " + e.Message); // player.not_in_room, client_rpc.busy, ...
                }
                client.Notify(Route.Move, "{\"x\":4,\"y\":4}"); // no answer ever comes
                return room.Members;
            }
            // doc:end
        }
    }
}
