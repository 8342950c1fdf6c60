// Package strlib is a bounded, drop-in replacement of Lua 5.1's string
// library for gopher-lua VMs that run code the gateway does not fully trust.
//
// gopher-lua checks a context's deadline once per VM instruction and nowhere
// else, so a single library call is invisible to it: string.find with a
// backtracking pattern held a 200 ms deadline for 56 s, and
// string.rep("a", 2^40) asked the Go runtime for a terabyte, which kills the
// process with an out-of-memory error that no recover can catch. This
// package closes both holes:
//
//   - every function that builds a string checks the size it is about to
//     build against Limits.MaxStringBytes before allocating it (gsub and
//     format, whose size is only known as they go, check before each append);
//   - the pattern matcher is a port of Lua 5.1's lstrlib.c that counts its
//     steps, stops at Limits.MaxMatchSteps, and every few thousand steps
//     looks at the LState's context, raising its error as the VM would.
//
// # Compatibility
//
// Results are Lua 5.1's. Where gopher-lua's own library differed from Lua
// 5.1 this package follows Lua 5.1, because those differences were bugs a
// script author could not have relied on:
//
//   - byte(s) returns one byte (gopher-lua returned all of them); match with
//     no match returns nil (gopher-lua returned nothing); char rejects values
//     outside 0..255; integer arguments accept numeric strings;
//   - patterns support %f, sets such as [%a-z] and back-references as Lua
//     5.1 does; find with an empty or special-free pattern honours init; a
//     leading '^' in gmatch is a literal; gsub with n <= 0 replaces nothing,
//     a replacement "%x" (x not a digit) inserts x, and a function or table
//     value that is not a string, number, nil or false is an error;
//   - upper and lower change ASCII letters only, byte for byte (gopher-lua
//     used Go's Unicode mapping, which can change a string's length);
//   - format parses its conversions as Lua 5.1 does and raises for an
//     unknown one or a missing argument instead of printing Go's
//     "%!d(MISSING)"; %c writes one byte; %s pads and cuts in bytes; %q is
//     Lua 5.1's quoting, which reads back in gopher-lua (Go's did not).
//
// Kept from gopher-lua on purpose, because scripts already see them in
// tostring and string concatenation: numbers in %s, %d, %x, %g and friends
// print as gopher-lua printed them (%g in Go's shortest form, infinity as
// "+Inf", %x of a negative number with a sign), and %s prints any value.
//
// Deliberate differences from Lua 5.1: rep takes Lua 5.2's separator
// argument; string.dump is absent; a pattern may contain "\0" and %s keeps
// bytes after a "\0" (C stopped at it); a lone '%' at the end of a gsub
// replacement is a literal '%' (C inserted a NUL); the matcher stops with
// "pattern too complex" past 200 nested calls (Lua 5.2's MAXCCALLS; Lua 5.1
// had no limit but the C stack); string.byte returns at most 8000 values
// ("string slice too long", Lua 5.1's stack limit).
package strlib
