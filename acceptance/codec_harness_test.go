package acceptance

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/shieldrpc/shield/client"
	"github.com/shieldrpc/shield/internal/wiretest"
)

// codecListener is one listener of a codec test config.
type codecListener struct {
	name, envelope, body string
}

// codecGameConfig is the example game (its real scripts and routes, as in
// configs/actors.yaml) behind the given listeners, with the example game's
// descriptor set for protobuf listeners and, when schemas is true, its
// JSON Schemas.
func codecGameConfig(t testing.TB, schemas bool, listeners ...codecListener) string {
	t.Helper()
	abs := func(rel string) string {
		p, err := filepath.Abs(rel)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	services, set, dir := abs("../configs/services"), abs("../configs/proto/game.pb"), abs("../configs/schemas")
	var ls string
	for _, l := range listeners {
		proto := fmt.Sprintf("{envelope: %s, body: %s}", l.envelope, l.body)
		if l.body == "protobuf" {
			proto = fmt.Sprintf("{envelope: %s, body: protobuf, descriptor_set: %s}", l.envelope, set)
		}
		ls += fmt.Sprintf("    - {name: %s, address: \"127.0.0.1:0\", entry_service: auth, protocol: %s}\n", l.name, proto)
	}
	if schemas {
		ls += "  schemas_dir: " + dir + "\n"
	}
	return fmt.Sprintf(`node: {name: gw-codec}
network:
  listeners:
%s
actors:
%[2]s`, ls, exampleActors(services))
}

// startCodecGame starts a server on cfg; it is stopped, and goroutines
// checked, at cleanup.
func startCodecGame(t testing.TB, cfg string) *game {
	t.Helper()
	return &game{wiretest.Start(t, "actors.yaml", cfg, quietLogger())}
}

// dialCodec connects to a listener with the given envelope.
func (g *game) dialCodec(t testing.TB, listener, envelope string) *client.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, g.Addr(listener), client.Options{Envelope: envelope})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// gameProto is the example game's descriptor set as a client holds it:
// read with protobuf-go alone, independently of package codec.
type gameProto struct {
	types map[string]protoreflect.MessageType
}

func loadGameProto(t testing.TB) *gameProto {
	t.Helper()
	data, err := os.ReadFile("../configs/proto/game.pb")
	if err != nil {
		t.Fatal(err)
	}
	var set descriptorpb.FileDescriptorSet
	if err := proto.Unmarshal(data, &set); err != nil {
		t.Fatal(err)
	}
	files, err := protodesc.NewFiles(&set)
	if err != nil {
		t.Fatal(err)
	}
	g := &gameProto{types: map[string]protoreflect.MessageType{}}
	files.RangeFiles(func(fd protoreflect.FileDescriptor) bool {
		for i := 0; i < fd.Messages().Len(); i++ {
			md := fd.Messages().Get(i)
			g.types[string(md.FullName())] = dynamicpb.NewMessageType(md)
		}
		return true
	})
	return g
}

// encode writes a message given in protobuf's JSON form as wire bytes.
func (g *gameProto) encode(t testing.TB, msg, js string) []byte {
	t.Helper()
	m := g.types[msg].New().Interface()
	if err := protojson.Unmarshal([]byte(js), m); err != nil {
		t.Fatalf("%s %s: %v", msg, js, err)
	}
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// decode reads wire bytes as msg and returns its JSON form with the proto
// field names, compact; it fails the test on bytes that are not msg.
func (g *gameProto) decode(t testing.TB, msg string, b []byte) string {
	t.Helper()
	s, err := g.tryDecode(msg, b)
	if err != nil {
		t.Fatalf("%s %x: %v", msg, b, err)
	}
	return s
}

func (g *gameProto) tryDecode(msg string, b []byte) (string, error) {
	m := g.types[msg].New().Interface()
	if err := proto.Unmarshal(b, m); err != nil {
		return "", err
	}
	js, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(m)
	if err != nil {
		return "", err
	}
	var out bytes.Buffer
	if err := json.Compact(&out, js); err != nil {
		return "", err
	}
	return out.String(), nil
}

// bodies collects the bodies pushed on one route, safe for the client's
// read loop to add to while the test reads.
type bodies struct {
	mu  sync.Mutex
	got [][]byte
}

func (b *bodies) add(body []byte) {
	b.mu.Lock()
	b.got = append(b.got, bytes.Clone(body))
	b.mu.Unlock()
}

// find returns the first body for which match holds.
func (b *bodies) find(match func([]byte) bool) ([]byte, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, body := range b.got {
		if match(body) {
			return body, true
		}
	}
	return nil, false
}
