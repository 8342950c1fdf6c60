package envelope

import (
	"bufio"
	"bytes"
	"io"
	"testing"
)

// The fuzz targets feed arbitrary bytes to each decoder, on both sides, whole
// and split into two reads (as nats-server's parser fuzz does), through a
// minimal and a default bufio buffer. Invariants: no panic; every way of
// feeding the bytes decodes the same frames and stops for the same reason;
// every decoded frame encodes, and decodes back to itself; the same holds
// for the bytes taken as one WebSocket message.

// fuzzMax is small so that the fuzzer reaches too_large easily.
const fuzzMax = 256

// FuzzIdlen fuzzes the idlen decoder.
func FuzzIdlen(f *testing.F) {
	for _, s := range []string{
		"00000008 01 000000 00000000",
		"0000000f 01 000bb9 00000005 7b2278223a317d",
		"0000000a 01 fffffe 00000000 6162 00000008 01 000000 00000000",
		"00000030 01 000000 00000007" + hexOf(`{"code":"client_rpc.busy","message":"m"}`),
		"00000012 01 000000 00000000" + hexOf(`{"code":1}`),
		"0000004a 01 000000 00000009" + hexOf(`{"code":"client_rpc.draining","message":"d","retry_after_ms":1500}`),
		"0000001c 01 000000 00000005" + hexOf(`{"deadline_ms":2500}`) + "0000000a 01 000003 00000005 7b7d",
		"ffffffff 01", "00000007", "00000008 02 000000 00000000", "000000",
	} {
		f.Add(hx(f, s))
	}
	f.Fuzz(func(t *testing.T, data []byte) { fuzzCodec(t, NameIdlen, data) })
}

// FuzzTypelen fuzzes the typelen decoder.
func FuzzTypelen(f *testing.F) {
	for _, s := range []string{
		"0000000c 01 05 0000 0000000000000000",
		"0000000d 01 01 ffff 0000010000000000 78",
		"0000000c 01 07 0bb9 0000000000000009",
		"00000027 01 03 0bb9 0000000000000005" + hexOf(`{"code":"a.b","message":""}`),
		"0000000e 01 04 07d1 0000000000000000 7b7d",
		"0000000c 01 08 0001 0000000000000001", "0000000b", "ffffffff",
		"00000020 01 08 0000 0000000000000005" + hexOf(`{"deadline_ms":2500}`),
	} {
		f.Add(hx(f, s))
	}
	f.Fuzz(func(t *testing.T, data []byte) { fuzzCodec(t, NameTypelen, data) })
}

// FuzzLenprefix fuzzes the lenprefix decoder and the wrapper parser.
func FuzzLenprefix(f *testing.F) {
	for _, w := range []string{
		`{"type":"heartbeat"}`,
		`{"type":"request","route":"move","route_id":3001,"request_id":5,"payload":{"x":1}}`,
		`{"route":"chat","payload":[1,"\u2028",null]}`,
		`{"type":"error","route_id":3,"request_id":4,"code":"c.d","message":"\"<"}`,
		`{"type":"notice","code":"session.kicked","message":"bye"}`,
		`{"type":"error","route_id":3,"request_id":4,"code":"client_rpc.busy","message":"m","retry_after_ms":100}`,
		`{"type":"push","route_id":9,"payload":null}`,
		`[]`, `{"route_id":-1}`, `{"request_id":18446744073709551615,"route_id":4294967295}`,
		`{"route_id":3,"request_id":5,"deadline_ms":2500,"payload":{}}`,
	} {
		f.Add(append(hx(f, hexOf(string([]byte{0, 0, byte(len(w) >> 8), byte(len(w))}))), w...))
	}
	f.Add(hx(f, "00000000"))
	f.Add(hx(f, "ffffffff 7b"))
	f.Fuzz(func(t *testing.T, data []byte) { fuzzCodec(t, NameLenprefix, data) })
}

// FuzzDelimiter fuzzes the delimiter line reader and the wrapper parser.
func FuzzDelimiter(f *testing.F) {
	for _, s := range []string{
		`{"type":"heartbeat"}` + "\n",
		`{"type":"request","route":"move","route_id":3001,"request_id":5,"payload":{"x":1}}` + "\n" + `{"type":"heartbeat"}` + "\n",
		`{"route_id":1, "payload": { "a" : "b\u0000" } }` + "\r\n",
		`{"type":"error","route":"m","route_id":3,"request_id":4,"code":"c.d","message":"x"}` + "\n",
		`{"type":"notice","code":"gateway.draining","message":"\ud800"}` + "\n",
		"\n", "null\n", `{"type":"heartbeat"}`, `{"route":"é\xff","payload":"\xfe"}` + "\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) { fuzzCodec(t, NameDelimiter, data) })
}

// fuzzCodec checks the invariants for one envelope and one input.
func fuzzCodec(t *testing.T, env string, data []byte) {
	for _, side := range []Side{FromClient, FromServer} {
		c := mustNew(t, env, side, fuzzMax)
		// The re-encoded frame may be longer than the input (escapes), so
		// it is read back without the small limit.
		back := mustNew(t, env, side, 1<<24)

		want, wantErr := readAll(c, bufio.NewReader(bytes.NewReader(data)))
		for _, half := range []int{len(data) / 2, 1} {
			if half > len(data) {
				continue
			}
			for _, size := range []int{16, 4096} {
				got, err := readAll(c, bufio.NewReaderSize(newSplitReader(data, half), size))
				if !sameOutcome(err, wantErr) || len(got) != len(want) {
					t.Fatalf("%s %v split %d bufio %d: %d frames, %v; whole: %d frames, %v",
						env, side, half, size, len(got), err, len(want), wantErr)
				}
				for i := range got {
					if !sameFrame(got[i], want[i]) {
						t.Fatalf("%s %v split %d bufio %d: frame %d = %+v, whole: %+v", env, side, half, size, i, got[i], want[i])
					}
				}
			}
		}
		if _, ok := ReasonOf(wantErr); !ok && wantErr != io.EOF {
			t.Fatalf("%s %v: stream ended with %v, want io.EOF or a protocol error", env, side, wantErr)
		}
		for _, f := range want {
			checkReencode(t, c, back, f)
		}
		if f, err := Decode(c, data); err == nil {
			checkReencode(t, c, back, f)
		} else if _, ok := ReasonOf(err); !ok {
			t.Fatalf("%s %v: DecodeMessage: %v, want a protocol error", env, side, err)
		}
	}
}

// checkReencode checks that a decoded frame encodes, as a stream frame and
// as a message, and decodes back to itself.
func checkReencode(t *testing.T, c, back Framer, f Frame) {
	wire, err := c.AppendFrame(nil, &f)
	if err != nil {
		t.Fatalf("%s: decoded frame %+v does not encode: %v", c.Name(), f, err)
	}
	r := bufio.NewReader(bytes.NewReader(wire))
	g, err := Read(back, r)
	if err != nil || !sameFrameOn(c.Name(), f, g) {
		t.Fatalf("%s: %+v re-encoded as %q decodes to %+v, %v", c.Name(), f, wire, g, err)
	}
	if _, err := Read(back, r); err != io.EOF {
		t.Fatalf("%s: %+v re-encoded as %q leaves trailing bytes: %v", c.Name(), f, wire, err)
	}
	msg, err := c.AppendMessage(nil, &f)
	if err != nil {
		t.Fatalf("%s: decoded frame %+v does not encode as a message: %v", c.Name(), f, err)
	}
	if g, err := Decode(back, msg); err != nil || !sameFrameOn(c.Name(), f, g) {
		t.Fatalf("%s: %+v as message %q decodes to %+v, %v", c.Name(), f, msg, g, err)
	}
}
