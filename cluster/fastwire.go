package cluster

import (
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/shieldrpc/shield/codes"
	"github.com/shieldrpc/shield/egress"
	"github.com/shieldrpc/shield/ingress"
)

// The hop's own messages (Instance's ingress and ingress_batch, Response
// and ResponseBatch; docs/cluster.md "The hop") are written and read here
// field by field with protowire, straight from and into Shield's plain
// data: the reflection of proto.Marshal and proto.Unmarshal, and the
// clusterpb structs they need per frame, were a fifth of each node's CPU
// under load. The bytes are the ones proto.Marshal writes (fastwire_test
// checks it), so a node built either way reads the other. The reader
// takes only the shape this writer makes (known fields, the right wire
// types, a singular message once); anything else it declines, and
// proto.Unmarshal reads the message as before.

// The field numbers of cluster.proto's messages the hop writes.
const (
	fInstanceIngress      = 1
	fInstanceIngressBatch = 6

	fBatchItems  = 1
	fBatchCommon = 2

	fIngressRef        = 1
	fIngressRoute      = 2
	fIngressRouteID    = 3
	fIngressRequestID  = 4
	fIngressRemoteAddr = 5
	fIngressBody       = 6
	fIngressCodec      = 7
	fIngressUnwrap     = 8
	fIngressAge        = 9
	fIngressBudget     = 10
	fIngressTrace      = 11
	fIngressReplyID    = 12

	fRefSessionID = 1
	fRefEpoch     = 2
	fRefPlayerID  = 3
	fRefGateway   = 4

	fResponseBody    = 1
	fResponseErr     = 2
	fResponseService = 3

	fErrorCode    = 1
	fErrorMessage = 2

	fResponsesIDs       = 1
	fResponsesResponses = 2
)

// bufs holds the buffers messages are written into: NATS copies a
// message when it is published, so each goes back at once.
var bufs = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// pooled publishes what write appends to a pooled buffer.
func pooled(write func([]byte) []byte, publish func([]byte) error) error {
	bp := bufs.Get().(*[]byte)
	b := write((*bp)[:0])
	err := publish(b)
	if cap(b) <= 64<<10 { // a rare huge batch is not kept
		*bp = b[:0]
		bufs.Put(bp)
	}
	return err
}

// wireIngress is one Ingress as it is written: a zero field is left out,
// as proto3 does; ref is written when full (a lone frame, a batch's common
// fields, or a batch's item that shares nothing with the others), and so
// are the route, remote_addr, codec and unwrap.
type wireIngress struct {
	in      *ingress.ClientIngress
	full    bool
	age     int64
	trace   string
	replyID uint64
}

func sizeVarint(num protowire.Number, v uint64) int {
	if v == 0 {
		return 0
	}
	return protowire.SizeTag(num) + protowire.SizeVarint(v)
}

func sizeBytes(num protowire.Number, n int) int {
	if n == 0 {
		return 0
	}
	return protowire.SizeTag(num) + protowire.SizeBytes(n)
}

func appendVarint(b []byte, num protowire.Number, v uint64) []byte {
	if v == 0 {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.VarintType)
	return protowire.AppendVarint(b, v)
}

func appendString(b []byte, num protowire.Number, s string) []byte {
	if s == "" {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendString(b, s)
}

func appendBytesField(b []byte, num protowire.Number, v []byte) []byte {
	if len(v) == 0 {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendBytes(b, v)
}

func appendBool(b []byte, num protowire.Number, v bool) []byte {
	if !v {
		return b
	}
	return appendVarint(b, num, 1)
}

func sizeBool(num protowire.Number, v bool) int {
	if !v {
		return 0
	}
	return sizeVarint(num, 1)
}

func sizeRef(r *egress.ClientRef) int {
	return sizeVarint(fRefSessionID, r.SessionID) + sizeVarint(fRefEpoch, r.Epoch) +
		sizeBytes(fRefPlayerID, len(r.PlayerID)) + sizeBytes(fRefGateway, len(r.Gateway))
}

// appendRef writes r as a message field: present even when empty, as
// refPB's non-nil message is.
func appendRef(b []byte, num protowire.Number, r *egress.ClientRef) []byte {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(sizeRef(r)))
	b = appendVarint(b, fRefSessionID, r.SessionID)
	b = appendVarint(b, fRefEpoch, r.Epoch)
	b = appendString(b, fRefPlayerID, r.PlayerID)
	return appendString(b, fRefGateway, r.Gateway)
}

func (w *wireIngress) size() int {
	in, c := w.in, &w.in.Client
	n := 0
	if w.full {
		rs := sizeRef(&c.Ref)
		n += protowire.SizeTag(fIngressRef) + protowire.SizeBytes(rs) + sizeBytes(fIngressRoute, len(c.Route))
	}
	n += sizeVarint(fIngressRouteID, uint64(c.RouteID)) + sizeVarint(fIngressRequestID, c.RequestID)
	if w.full {
		n += sizeBytes(fIngressRemoteAddr, len(c.RemoteAddr))
	}
	n += sizeBytes(fIngressBody, len(in.Body))
	if w.full {
		n += sizeBytes(fIngressCodec, len(in.Codec)) + sizeBool(fIngressUnwrap, in.Unwrap)
	}
	return n + sizeVarint(fIngressAge, uint64(w.age)) + sizeVarint(fIngressBudget, uint64(int64(in.Budget))) +
		sizeBytes(fIngressTrace, len(w.trace)) + sizeVarint(fIngressReplyID, w.replyID)
}

// appendMsg writes w as the message field num.
func (w *wireIngress) appendMsg(b []byte, num protowire.Number) []byte {
	in, c := w.in, &w.in.Client
	b = protowire.AppendTag(b, num, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(w.size()))
	if w.full {
		b = appendRef(b, fIngressRef, &c.Ref)
		b = appendString(b, fIngressRoute, c.Route)
	}
	b = appendVarint(b, fIngressRouteID, uint64(c.RouteID))
	b = appendVarint(b, fIngressRequestID, c.RequestID)
	if w.full {
		b = appendString(b, fIngressRemoteAddr, c.RemoteAddr)
	}
	b = appendBytesField(b, fIngressBody, in.Body)
	if w.full {
		b = appendString(b, fIngressCodec, in.Codec)
		b = appendBool(b, fIngressUnwrap, in.Unwrap)
	}
	b = appendVarint(b, fIngressAge, uint64(w.age))
	b = appendVarint(b, fIngressBudget, uint64(int64(in.Budget)))
	b = appendString(b, fIngressTrace, w.trace)
	return appendVarint(b, fIngressReplyID, w.replyID)
}

// appendIngress writes Instance{ingress} for a lone frame: ingressPB's
// bytes.
func appendIngress(b []byte, in *ingress.ClientIngress, now time.Time) []byte {
	w := wireIngress{in: in, full: true, age: int64(now.Sub(in.Received)), trace: in.Trace.TraceParent()}
	return w.appendMsg(b, fInstanceIngress)
}

// appendIngressBatch writes Instance{ingress_batch} for ins, item i with
// reply id first+i; shared says the frames share their ref, remote
// address, codec and unwrap, which then travel once, in common.
func appendIngressBatch(b []byte, ins []*ingress.ClientIngress, shared bool, first uint64, now time.Time) []byte {
	var traces []string // rare: only traced frames have one
	for i, in := range ins {
		if tp := in.Trace.TraceParent(); tp != "" {
			if traces == nil {
				traces = make([]string, len(ins))
			}
			traces[i] = tp
		}
	}
	item := func(i int) wireIngress {
		w := wireIngress{in: ins[i], full: !shared, age: int64(now.Sub(ins[i].Received)), replyID: first + uint64(i)}
		if traces != nil {
			w.trace = traces[i]
		}
		return w
	}
	n := 0
	for i := range ins {
		w := item(i)
		n += protowire.SizeTag(fBatchItems) + protowire.SizeBytes(w.size())
	}
	var common wireIngress
	if shared {
		// The shared fields alone: a ClientIngress with nothing else set.
		common = wireIngress{in: &ingress.ClientIngress{Client: ingress.ClientContext{Ref: ins[0].Client.Ref,
			RemoteAddr: ins[0].Client.RemoteAddr}, Codec: ins[0].Codec, Unwrap: ins[0].Unwrap}, full: true}
		n += protowire.SizeTag(fBatchCommon) + protowire.SizeBytes(common.size())
	}
	b = protowire.AppendTag(b, fInstanceIngressBatch, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(n))
	for i := range ins {
		w := item(i)
		b = w.appendMsg(b, fBatchItems)
	}
	if shared {
		b = common.appendMsg(b, fBatchCommon)
	}
	return b
}

// sizeResponse is the size of r's Response fields.
func sizeResponse(r *egress.Response) int {
	n := sizeBytes(fResponseBody, len(r.Body)) + sizeBytes(fResponseService, len(r.Service))
	if r.Err != nil {
		n += protowire.SizeTag(fResponseErr) + protowire.SizeBytes(sizeError(r.Err))
	}
	return n
}

func sizeError(e *codes.Error) int {
	return sizeBytes(fErrorCode, len(e.Code)) + sizeBytes(fErrorMessage, len(e.Message))
}

// appendResponse writes r's Response fields (Respond's message).
func appendResponse(b []byte, r *egress.Response) []byte {
	b = appendBytesField(b, fResponseBody, r.Body)
	if e := r.Err; e != nil {
		b = protowire.AppendTag(b, fResponseErr, protowire.BytesType)
		b = protowire.AppendVarint(b, uint64(sizeError(e)))
		b = appendString(b, fErrorCode, string(e.Code))
		b = appendString(b, fErrorMessage, e.Message)
	}
	return appendString(b, fResponseService, r.Service)
}

// appendResponseBatch writes a ResponseBatch of rs with ids (the ids
// packed, as proto3 packs a repeated scalar).
func appendResponseBatch(b []byte, ids []uint64, rs []*egress.Response) []byte {
	n := 0
	for _, id := range ids {
		n += protowire.SizeVarint(id)
	}
	if n > 0 {
		b = protowire.AppendTag(b, fResponsesIDs, protowire.BytesType)
		b = protowire.AppendVarint(b, uint64(n))
		for _, id := range ids {
			b = protowire.AppendVarint(b, id)
		}
	}
	for _, r := range rs {
		b = protowire.AppendTag(b, fResponsesResponses, protowire.BytesType)
		b = protowire.AppendVarint(b, uint64(sizeResponse(r)))
		b = appendResponse(b, r)
	}
	return b
}

// The reader. Each function returns false for a message it declines.

// field reads one field: its number, wire type, and either its varint v
// or its bytes; rest is what follows.
func field(b []byte) (num protowire.Number, typ protowire.Type, v uint64, bs []byte, rest []byte, ok bool) {
	num, typ, n := protowire.ConsumeTag(b)
	if n < 0 {
		return 0, 0, 0, nil, nil, false
	}
	b = b[n:]
	switch typ {
	case protowire.VarintType:
		v, n = protowire.ConsumeVarint(b)
	case protowire.BytesType:
		bs, n = protowire.ConsumeBytes(b)
	default:
		return 0, 0, 0, nil, nil, false
	}
	if n < 0 {
		return 0, 0, 0, nil, nil, false
	}
	return num, typ, v, bs, b[n:], true
}

// str is bs as a string, when it is UTF-8 (proto3 requires it of a
// string field, and proto.Unmarshal checks it).
func str(bs []byte) (string, bool) {
	if !utf8.Valid(bs) {
		return "", false
	}
	return string(bs), true
}

// readInstance reads a message that is exactly one Instance field:
// its number and bytes.
func readInstance(b []byte) (protowire.Number, []byte, bool) {
	num, typ, _, bs, rest, ok := field(b)
	if !ok || typ != protowire.BytesType || len(rest) != 0 {
		return 0, nil, false
	}
	return num, bs, true
}

func readRef(b []byte, r *egress.ClientRef) bool {
	for len(b) > 0 {
		num, typ, v, bs, rest, ok := field(b)
		if !ok {
			return false
		}
		b = rest
		switch {
		case num == fRefSessionID && typ == protowire.VarintType:
			r.SessionID = v
		case num == fRefEpoch && typ == protowire.VarintType:
			r.Epoch = v
		case num == fRefPlayerID && typ == protowire.BytesType:
			if r.PlayerID, ok = str(bs); !ok {
				return false
			}
		case num == fRefGateway && typ == protowire.BytesType:
			if r.Gateway, ok = str(bs); !ok {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// readIngress reads an Ingress into in (its Received from now and the
// age) and returns its reply id. The body aliases b: nats.go gives each
// message its own data.
func readIngress(b []byte, in *ingress.ClientIngress, now time.Time) (uint64, bool) {
	var age, replyID uint64
	var trace string
	hasRef := false
	c := &in.Client
	for len(b) > 0 {
		num, typ, v, bs, rest, ok := field(b)
		if !ok {
			return 0, false
		}
		b = rest
		if typ == protowire.VarintType {
			switch num {
			case fIngressRouteID:
				c.RouteID = uint32(v)
			case fIngressRequestID:
				c.RequestID = v
			case fIngressUnwrap:
				in.Unwrap = v != 0
			case fIngressAge:
				age = v
			case fIngressBudget:
				in.Budget = time.Duration(max(int64(v), 0))
			case fIngressReplyID:
				replyID = v
			default:
				return 0, false
			}
			continue
		}
		switch num {
		case fIngressRef:
			if hasRef || !readRef(bs, &c.Ref) { // a second ref would merge: proto.Unmarshal's to do
				return 0, false
			}
			hasRef = true
		case fIngressBody:
			in.Body = bs[:len(bs):len(bs)]
		case fIngressRoute, fIngressRemoteAddr, fIngressCodec, fIngressTrace:
			s, ok := str(bs)
			if !ok {
				return 0, false
			}
			switch num {
			case fIngressRoute:
				c.Route = s
			case fIngressRemoteAddr:
				c.RemoteAddr = s
			case fIngressCodec:
				in.Codec = s
			default:
				trace = s
			}
		default:
			return 0, false
		}
	}
	in.Received = now.Add(-time.Duration(int64(age)))
	in.Trace = traceOf(trace)
	return replyID, true
}

// readIngressBatch reads an IngressBatch's items, each with its reply
// subject prefix + its reply id, with common's fields (and the receiver's
// route name) in each when it has them.
func (n *Node) readIngressBatch(b []byte, prefix string, now time.Time) ([]*ingress.ClientIngress, bool) {
	var vals []ingress.ClientIngress
	var replyIDs []uint64
	var common *ingress.ClientIngress
	for len(b) > 0 {
		num, typ, _, bs, rest, ok := field(b)
		if !ok || typ != protowire.BytesType {
			return nil, false
		}
		b = rest
		switch num {
		case fBatchItems:
			vals = append(vals, ingress.ClientIngress{})
			id, ok := readIngress(bs, &vals[len(vals)-1], now)
			if !ok {
				return nil, false
			}
			replyIDs = append(replyIDs, id)
		case fBatchCommon:
			if common != nil {
				return nil, false
			}
			common = new(ingress.ClientIngress)
			if _, ok := readIngress(bs, common, now); !ok {
				return nil, false
			}
		default:
			return nil, false
		}
	}
	// The reply subjects share one string: one allocation per batch.
	var subj []byte
	ends := make([]int, len(vals))
	for i, id := range replyIDs {
		subj = strconv.AppendUint(append(subj, prefix...), id, 10)
		ends[i] = len(subj)
	}
	all := string(subj)
	edge := n.edge.Load()
	ins := make([]*ingress.ClientIngress, len(vals))
	start := 0
	for i := range vals {
		in := &vals[i]
		in.Reply, start = all[start:ends[i]], ends[i]
		if common != nil {
			in.Client.Ref, in.Client.RemoteAddr, in.Codec, in.Unwrap = common.Client.Ref, common.Client.RemoteAddr, common.Codec, common.Unwrap
			if r := edge.Lookup(in.Client.RouteID); r != nil {
				in.Client.Route = r.Name
			}
		}
		ins[i] = in
	}
	return ins, true
}

// readResponse reads a Response into r; service is kept as known when
// it is that name (the common case: no string is made).
func readResponse(b []byte, r *egress.Response, known string) bool {
	hasErr := false
	for len(b) > 0 {
		num, typ, _, bs, rest, ok := field(b)
		if !ok || typ != protowire.BytesType {
			return false
		}
		b = rest
		switch num {
		case fResponseBody:
			r.Body = bs[:len(bs):len(bs)]
		case fResponseErr:
			if hasErr {
				return false
			}
			hasErr = true
			e := &codes.Error{}
			for eb := bs; len(eb) > 0; {
				num, typ, _, v, rest, ok := field(eb)
				if !ok || typ != protowire.BytesType {
					return false
				}
				eb = rest
				s, ok := str(v)
				switch {
				case !ok:
					return false
				case num == fErrorCode:
					e.Code = codes.Code(s)
				case num == fErrorMessage:
					e.Message = s
				default:
					return false
				}
			}
			r.Err = e
		case fResponseService:
			if string(bs) == known {
				r.Service = known
			} else if r.Service, ok = str(bs); !ok {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// readResponseBatch reads a ResponseBatch's ids (packed or not) into ids
// and returns them with the bytes of its responses, in order.
func readResponseBatch(b []byte, ids []uint64, responses [][]byte) ([]uint64, [][]byte, bool) {
	for len(b) > 0 {
		num, typ, v, bs, rest, ok := field(b)
		if !ok {
			return nil, nil, false
		}
		b = rest
		switch {
		case num == fResponsesIDs && typ == protowire.VarintType:
			ids = append(ids, v)
		case num == fResponsesIDs:
			for len(bs) > 0 {
				v, n := protowire.ConsumeVarint(bs)
				if n < 0 {
					return nil, nil, false
				}
				ids, bs = append(ids, v), bs[n:]
			}
		case num == fResponsesResponses && typ == protowire.BytesType:
			responses = append(responses, bs)
		default:
			return nil, nil, false
		}
	}
	return ids, responses, true
}
