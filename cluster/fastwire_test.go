package cluster

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	pb "github.com/shieldrpc/shield/cluster/clusterpb"
	"github.com/shieldrpc/shield/codes"
	"github.com/shieldrpc/shield/descriptor"
	"github.com/shieldrpc/shield/egress"
	"github.com/shieldrpc/shield/ingress"
	"github.com/shieldrpc/shield/tracing"
)

// The reference fastwire.go is checked against: the clusterpb messages
// the hop sent before it wrote its own bytes.

func ingressMsg(in *ingress.ClientIngress, now time.Time) *pb.Ingress {
	c := &in.Client
	return &pb.Ingress{
		Ref: refPB(c.Ref), Route: c.Route, RouteId: c.RouteID, RequestId: c.RequestID, RemoteAddr: c.RemoteAddr,
		Body: in.Body, Codec: in.Codec, Unwrap: in.Unwrap, AgeNanos: int64(now.Sub(in.Received)), BudgetNanos: int64(in.Budget),
		Traceparent: in.Trace.TraceParent(),
	}
}

func batchPB(ins []*ingress.ClientIngress, shared bool, first uint64, now time.Time) *pb.Instance {
	b := &pb.IngressBatch{}
	if shared {
		b.Common = &pb.Ingress{Ref: refPB(ins[0].Client.Ref), RemoteAddr: ins[0].Client.RemoteAddr, Codec: ins[0].Codec, Unwrap: ins[0].Unwrap}
	}
	for i, in := range ins {
		m := ingressMsg(in, now)
		if shared {
			m = &pb.Ingress{RouteId: in.Client.RouteID, RequestId: in.Client.RequestID, Body: in.Body,
				AgeNanos: int64(now.Sub(in.Received)), BudgetNanos: int64(in.Budget), Traceparent: in.Trace.TraceParent()}
		}
		m.ReplyId = first + uint64(i)
		b.Items = append(b.Items, m)
	}
	return &pb.Instance{Kind: &pb.Instance_IngressBatch{IngressBatch: b}}
}

func responsePB(r *egress.Response) *pb.Response {
	return &pb.Response{Body: r.Body, Err: errPB(r.Err), Service: r.Service}
}

// randomIngress is a frame with each field set or zero at random (zero
// is the case proto3 leaves out).
func randomIngress(rng *rand.Rand, now time.Time) *ingress.ClientIngress {
	pick := func(s ...string) string { return s[rng.IntN(len(s))] }
	num := func() uint64 {
		switch rng.IntN(3) {
		case 0:
			return 0
		case 1:
			return uint64(rng.IntN(300))
		}
		return rng.Uint64()
	}
	in := &ingress.ClientIngress{
		Client: ingress.ClientContext{
			Ref:        egress.ClientRef{SessionID: num(), Epoch: num(), PlayerID: pick("", "alice", "игрок"), Gateway: pick("", "gw-a")},
			Route:      pick("", "echo", "player.move"),
			RouteID:    uint32(num()),
			RequestID:  num(),
			RemoteAddr: pick("", "127.0.0.1:5000"),
		},
		Codec:    pick("", "json", "raw"),
		Unwrap:   rng.IntN(2) == 0,
		Received: now.Add(-time.Duration(rng.IntN(3)-1) * time.Millisecond),
		Budget:   time.Duration(rng.IntN(3)) * time.Second,
	}
	if rng.IntN(3) > 0 {
		in.Body = make([]byte, rng.IntN(200)+1)
		for i := range in.Body {
			in.Body[i] = byte(rng.Uint32())
		}
	}
	if rng.IntN(4) == 0 {
		in.Trace = tracing.Context{TraceID: [16]byte{1, 2}, SpanID: [8]byte{3}, Flags: 1}
	}
	return in
}

func randomResponse(rng *rand.Rand) *egress.Response {
	r := &egress.Response{Service: []string{"", "echo", "player"}[rng.IntN(3)]}
	if rng.IntN(2) == 0 {
		r.Body = []byte(fmt.Sprintf(`{"n":%d}`, rng.IntN(1000)))
	}
	switch rng.IntN(3) {
	case 0:
		r.Err = codes.New(codes.HandlerFailed, "boom %d", rng.IntN(9))
	case 1:
		r.Err = &codes.Error{} // present, empty: written as an empty message
	}
	return r
}

// same compares two frames as the runtime sees them (an empty body is
// no body).
func same(t *testing.T, what string, got, want *ingress.ClientIngress) {
	t.Helper()
	g, w := *got, *want
	if len(g.Body) == 0 && len(w.Body) == 0 {
		g.Body, w.Body = nil, nil
	}
	if !reflect.DeepEqual(g, w) {
		t.Fatalf("%s:\n got %+v\nwant %+v", what, g, w)
	}
}

// TestFastWire: what fastwire.go writes is, byte for byte, what
// proto.Marshal writes for the same message, and what it reads is what
// proto.Unmarshal and wire.go's conversions read.
func TestFastWire(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	now := time.Now()
	n := &Node{}
	n.edge.Store(&descriptor.Edge{})
	for i := range 500 {
		in := randomIngress(rng, now)
		got := appendIngress(nil, in, now)
		want := marshal(&pb.Instance{Kind: &pb.Instance_Ingress{Ingress: ingressMsg(in, now)}})
		if !bytes.Equal(got, want) {
			t.Fatalf("case %d: lone frame %+v:\n got %x\nwant %x", i, in, got, want)
		}
		num, b, ok := readInstance(got)
		read := &ingress.ClientIngress{}
		if _, ok2 := readIngress(b, read, now); !ok || !ok2 || num != fInstanceIngress {
			t.Fatalf("case %d: declined its own lone frame", i)
		}
		read.Reply = "r"
		same(t, fmt.Sprintf("case %d: lone frame", i), read, ingressOf(ingressMsg(in, now), "r", now))

		ins := []*ingress.ClientIngress{in}
		for range rng.IntN(20) {
			next := randomIngress(rng, now)
			if rng.IntN(2) == 0 {
				next.Client.Ref, next.Client.RemoteAddr, next.Codec, next.Unwrap = in.Client.Ref, in.Client.RemoteAddr, in.Codec, in.Unwrap
			}
			ins = append(ins, next)
		}
		shared := true
		for _, o := range ins[1:] {
			shared = shared && o.Client.Ref == in.Client.Ref && o.Client.RemoteAddr == in.Client.RemoteAddr && o.Codec == in.Codec && o.Unwrap == in.Unwrap
		}
		first := uint64(rng.IntN(1 << 20))
		got = appendIngressBatch(nil, ins, shared, first, now)
		m := batchPB(ins, shared, first, now)
		if want := marshal(m); !bytes.Equal(got, want) {
			t.Fatalf("case %d: batch of %d (shared %v):\n got %x\nwant %x", i, len(ins), shared, got, want)
		}
		num, b, ok = readInstance(got)
		reads, ok2 := n.readIngressBatch(b, "p.", now)
		if !ok || !ok2 || num != fInstanceIngressBatch {
			t.Fatalf("case %d: declined its own batch", i)
		}
		wants := n.ingressBatchOf(m.GetIngressBatch(), "p.0", now)
		if len(reads) != len(wants) {
			t.Fatalf("case %d: read %d frames of %d", i, len(reads), len(wants))
		}
		for j := range reads {
			same(t, fmt.Sprintf("case %d: batch item %d", i, j), reads[j], wants[j])
		}

		rs := make([]*egress.Response, 1+rng.IntN(20))
		ids := make([]uint64, len(rs))
		rb := &pb.ResponseBatch{}
		for j := range rs {
			rs[j], ids[j] = randomResponse(rng), uint64(rng.IntN(1<<30))
			rb.Ids, rb.Responses = append(rb.Ids, ids[j]), append(rb.Responses, responsePB(rs[j]))
		}
		if got, want := appendResponse(nil, rs[0]), marshal(responsePB(rs[0])); !bytes.Equal(got, want) {
			t.Fatalf("case %d: response %+v:\n got %x\nwant %x", i, rs[0], got, want)
		}
		got = appendResponseBatch(nil, ids, rs)
		if want := marshal(rb); !bytes.Equal(got, want) {
			t.Fatalf("case %d: response batch:\n got %x\nwant %x", i, got, want)
		}
		gotIDs, bodies, ok := readResponseBatch(got, nil, nil)
		if !ok || !reflect.DeepEqual(gotIDs, ids) || len(bodies) != len(rs) {
			t.Fatalf("case %d: response batch read back: %v %v %d", i, ok, gotIDs, len(bodies))
		}
		for j, body := range bodies {
			var r egress.Response
			if !readResponse(body, &r, "echo") {
				t.Fatalf("case %d: declined its own response %d", i, j)
			}
			want := *rs[j]
			if len(want.Body) == 0 {
				want.Body, r.Body = nil, nil
			}
			if !reflect.DeepEqual(r, want) {
				t.Fatalf("case %d: response %d:\n got %+v\nwant %+v", i, j, r, want)
			}
		}
	}
}

// TestFastWireDeclines: what the reader does not take is left to
// proto.Unmarshal, which reads it as before.
func TestFastWireDeclines(t *testing.T) {
	now := time.Now()
	in := &ingress.ClientIngress{Client: ingress.ClientContext{Ref: egress.ClientRef{SessionID: 1}, RouteID: 7}, Received: now}
	lone := appendIngress(nil, in, now)
	withUnknown := append(append([]byte{}, lone...), 0x18, 0x01) // Instance field 3 (a lifecycle) as a varint
	twoRefs := marshal(&pb.Ingress{Ref: &pb.ClientRef{SessionId: 1}})
	twoRefs = append(twoRefs, marshal(&pb.Ingress{Ref: &pb.ClientRef{Epoch: 2}})...)
	for _, c := range []struct {
		name string
		msg  []byte
	}{
		{"two Instance fields", withUnknown},
		{"a truncated message", lone[:len(lone)-1]},
		{"a call", marshal(&pb.Instance{Kind: &pb.Instance_Call{Call: &pb.Call{Method: "m"}}})},
	} {
		num, b, ok := readInstance(c.msg)
		if ok && (num == fInstanceIngress || num == fInstanceIngressBatch) {
			if _, ok := readIngress(b, &ingress.ClientIngress{}, now); ok && num == fInstanceIngress {
				t.Errorf("%s: taken", c.name)
			}
		}
	}
	if _, ok := readIngress(twoRefs, &ingress.ClientIngress{}, now); ok {
		t.Error("an Ingress with two refs (which proto merges) was taken")
	}
	if _, ok := readIngress(marshal(&pb.Ingress{Route: "x"})[:2], &ingress.ClientIngress{}, now); ok {
		t.Error("a cut string was taken")
	}
	bad := marshal(&pb.ClientRef{PlayerId: "ok"})
	bad[len(bad)-1] = 0xff
	if readRef(bad, &egress.ClientRef{}) {
		t.Error("a player id that is not UTF-8 was taken")
	}
}

// FuzzFastWire: whatever bytes fastwire's reader takes, proto.Unmarshal
// takes too, and both read the same frames and answers.
func FuzzFastWire(f *testing.F) {
	rng := rand.New(rand.NewPCG(3, 4))
	now := time.Unix(1e9, 0)
	for range 8 {
		in := randomIngress(rng, now)
		f.Add(appendIngress(nil, in, now))
		f.Add(appendIngressBatch(nil, []*ingress.ClientIngress{in, randomIngress(rng, now)}, false, 5, now))
		f.Add(appendResponseBatch(nil, []uint64{1, 2}, []*egress.Response{randomResponse(rng), randomResponse(rng)}))
	}
	n := &Node{}
	n.edge.Store(&descriptor.Edge{})
	f.Fuzz(func(t *testing.T, data []byte) {
		if num, b, ok := readInstance(data); ok {
			var m pb.Instance
			switch num {
			case fInstanceIngress:
				in := &ingress.ClientIngress{}
				if _, ok := readIngress(b, in, now); ok {
					if err := proto.Unmarshal(data, &m); err != nil || m.GetIngress() == nil {
						t.Fatalf("taken, but proto.Unmarshal says %v", err)
					}
					same(t, "lone frame", in, ingressOf(m.GetIngress(), "", now))
				}
			case fInstanceIngressBatch:
				if ins, ok := n.readIngressBatch(b, "p.", now); ok {
					if err := proto.Unmarshal(data, &m); err != nil || m.GetIngressBatch() == nil {
						t.Fatalf("taken, but proto.Unmarshal says %v", err)
					}
					wants := n.ingressBatchOf(m.GetIngressBatch(), "p.0", now)
					if len(ins) != len(wants) {
						t.Fatalf("read %d frames, proto %d", len(ins), len(wants))
					}
					for i := range ins {
						same(t, "batch item", ins[i], wants[i])
					}
				}
			}
		}
		// A batch is taken when its responses are too (onResponseBatch).
		ids, bodies, ok := readResponseBatch(data, nil, nil)
		rs := make([]egress.Response, len(bodies))
		for i := 0; ok && i < len(bodies); i++ {
			ok = readResponse(bodies[i], &rs[i], "echo")
		}
		if ok {
			var rb pb.ResponseBatch
			if err := proto.Unmarshal(data, &rb); err != nil {
				t.Fatalf("batch taken, but proto.Unmarshal says %v", err)
			}
			if !reflect.DeepEqual(ids, rb.Ids) && !(len(ids) == 0 && len(rb.Ids) == 0) {
				t.Fatalf("ids %v, proto %v", ids, rb.Ids)
			}
			if len(bodies) != len(rb.Responses) {
				t.Fatalf("%d responses, proto %d", len(bodies), len(rb.Responses))
			}
			for i, m := range rb.Responses {
				want := egress.Response{Body: m.Body, Service: m.Service, Err: errOf(m.Err)}
				if len(want.Body) == 0 {
					want.Body, rs[i].Body = nil, nil
				}
				if !reflect.DeepEqual(rs[i], want) {
					t.Fatalf("response %d:\n got %+v\nwant %+v", i, rs[i], want)
				}
			}
		}
		var r egress.Response
		if readResponse(data, &r, "echo") {
			var m pb.Response
			if err := proto.Unmarshal(data, &m); err != nil {
				t.Fatalf("response taken, but proto.Unmarshal says %v", err)
			}
			want := egress.Response{Body: m.Body, Service: m.Service, Err: errOf(m.Err)}
			if len(want.Body) == 0 {
				want.Body, r.Body = nil, nil
			}
			if !reflect.DeepEqual(r, want) {
				t.Fatalf("response:\n got %+v\nwant %+v", r, want)
			}
		}
	})
}
