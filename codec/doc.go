// Package codec turns a route's body bytes into gopher-lua values and back
// (SPEC.md section 8, "JSON <-> Lua"), and validates JSON requests against
// their JSON Schemas (section 6). A Codec is looked up by the key its
// listener's sessions carry (gateway.BodyCodecKey):
//
//   - "json" and "raw" are registered by this package. raw hands the body
//     over as a Lua string and sends back only strings (raw.go).
//   - A protobuf listener's codec belongs to its descriptor set, so the
//     runtime builds one with NewProtobuf at start and registers it under
//     "protobuf/<listener>" (protobuf.go: the mapping through protobuf's
//     JSON form, and what happens to unknown fields).
//   - A program embedding Shield may Register its own Codec under a name of
//     its choosing.
//
// Schemas (schema.go) holds the compiled JSON Schemas of network.schemas_dir
// and produces SPEC section 6's schema_violation messages.
//
// The rest of this comment is the JSON mapping, which the protobuf codec
// shares.
//
// # JSON to Lua (DecodeJSON)
//
//   - An object is a table with string keys. A key given twice keeps its last
//     value, as encoding/json does.
//   - An array is a sequence t[1..n] whose metatable is the VM's array mark
//     (see MarkArray), so `[]` re-encodes as `[]` and `[1,2]` as `[1,2]`.
//   - null, in a container or at the top, is the VM's shield.null sentinel
//     (see Null): a Lua nil cannot be stored in a table.
//   - An integer literal (no fraction, no exponent) whose magnitude is above
//     2^53 reaches Lua as its decimal string, exactly as written (SPEC:
//     "Integers that do not fit a Lua number exactly"). Every other number is
//     a Lua number; one beyond float64's range (1e400) is a decode error
//     rather than an infinity that could not be encoded again.
//   - A negative zero decodes as 0: Lua authors should not meet -0.
//   - The input must be one RFC 8259 value with optional whitespace around it,
//     nested at most MaxDepth arrays and objects deep. Invalid UTF-8 in the
//     input is an error (encoding/json would replace it). An escaped UTF-16
//     surrogate that is not part of a valid pair becomes U+FFFD, as with
//     encoding/json, so both accept the same texts.
//
// Decode errors are *DecodeError values, which errors.As also finds as a
// *codes.Error with code client_rpc.decode_failed.
//
// # Lua to JSON (AppendJSON)
//
//   - A table marked as an array (decoded from JSON, or passed to
//     shield.array) encodes t[1..#t] as an array, a nil hole as null, and
//     ignores its other keys. An unmarked table whose keys are exactly 1..n
//     (n >= 1) is an array too. Any other table, the empty one included, is an
//     object.
//   - Object keys are strings, or integral numbers written as their decimal
//     string (so {[1]="a", [3]="b"} is {"1":"a","3":"b"}); a number key that
//     is not an integer below 1e21 in magnitude, a key of another type, and a
//     number and a string key that give the same text are encode errors.
//     Keys are sorted bytewise.
//   - Numbers are written as encoding/json writes a float64, the ECMAScript
//     Number-to-string form: integral values below 1e21 in plain digits
//     (3 is "3", 1e20 is "100000000000000000000", 2^64 is
//     "18446744073709552000"), others in their shortest round-trip form with an
//     exponent outside [1e-6, 1e21). -0 is written "0". NaN and the infinities
//     are encode errors. An integral number above 2^53 therefore reads back
//     as a string: that is SPEC's rule for such integers, not a loss.
//   - Strings must be valid UTF-8; `"`, `\` and control characters are
//     escaped, everything else (`<`, `>`, `&`, U+2028) is written as is.
//   - shield.null and nil are null; booleans are true and false. A function,
//     a thread, a channel or any other userdata is an encode error.
//   - Tables are read raw: metamethods (__index, __pairs) are never called,
//     so encoding runs no Lua code and cannot yield or fail halfway in Lua.
//   - Nesting deeper than MaxDepth, or a table that contains itself, is an
//     error rather than a stack overflow.
//
// Encode errors are *EncodeError values naming the JSON Pointer of the bad
// value in the document being written (0-based array indices, "/" for the
// whole value), like the schema_violation messages of SPEC section 6.
//
// All per-VM state (the sentinels and scratch buffers) lives in the
// LState's registry, so nothing is shared between VMs and no lock is taken;
// like the LState itself it must be used from one goroutine at a time.
package codec
