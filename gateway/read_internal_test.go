package gateway

import (
	"testing"
	"time"

	"github.com/shieldrpc/shield/codes"
	"github.com/shieldrpc/shield/egress"
	"github.com/shieldrpc/shield/envelope"
	"github.com/shieldrpc/shield/ingress"
	"github.com/shieldrpc/shield/service"
)

// The runtime takes a read's frames in one hand-off.
var _ allDeliverer = (*service.Runtime)(nil)

// allServices is a fakeServices that takes frames in one hand-off, room of
// them at most.
type allServices struct {
	fakeServices
	room  int
	calls [][]uint64 // the request ids of each DeliverAll
}

func (a *allServices) DeliverAll(_ egress.ActorID, ins []*ingress.ClientIngress) (int, *codes.Error) {
	var ids []uint64
	for _, in := range ins {
		ids = append(ids, in.Client.RequestID)
	}
	a.calls = append(a.calls, ids)
	n := min(a.room, len(ins))
	a.room -= n
	if n < len(ins) {
		return n, codes.New(codes.Busy, "full")
	}
	return n, nil
}

// TestReadDeliveredTogether: the frames one read brings are judged one by
// one (each takes its slot as it arrives) and go to their target in one
// hand-off once all are judged; those its lane has no room for are refused
// busy: they give their slots back and get their error frames.
func TestReadDeliveredTogether(t *testing.T) {
	svc := &allServices{room: 2}
	g := newFakeGateway(t, &svc.fakeServices)
	g.svc = svc
	p := g.addPeer(t)
	b := p.s.Binding()
	g.Bind(&egress.BindRequest{Ref: b.Ref(p.s.ID), PlayerID: "p", Target: b.Target, Caller: b.Target},
		func(_ egress.ClientRef, err *codes.Error) {
			if err != nil {
				t.Fatal(err)
			}
		})
	var out deliveries
	for id := uint64(1); id <= 3; id++ {
		f := envelope.Frame{Kind: envelope.Request, RouteID: 1, RequestID: id}
		p.frame(&f, time.Now(), nil, &out)
	}
	if len(svc.calls) != 0 || p.s.Inflight() != 3 {
		t.Fatalf("before the flush: hand-offs %v, %d slots taken; want none and 3", svc.calls, p.s.Inflight())
	}
	out.flush()
	if len(svc.calls) != 1 || len(svc.calls[0]) != 3 {
		t.Fatalf("hand-offs %v, want one of the three", svc.calls)
	}
	if n := p.s.Inflight(); n != 2 {
		t.Fatalf("%d slots taken after the flush, want 2", n)
	}
	queued := p.s.Take(nil)
	if len(queued) != 1 || queued[0].Frame.Code != string(codes.Busy) || queued[0].Frame.RequestID != 3 {
		t.Fatalf("queued %+v, want request 3's busy", queued)
	}
}
