package codec

import (
	"errors"
	"fmt"
	"os"
	"strings"

	lua "github.com/yuin/gopher-lua"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/shieldrpc/shield/codes"
)

// ProtobufName is the name a Protobuf codec reports until WithName gives it
// another. The runtime registers one codec per protobuf listener, under
// "protobuf/<listener>" (gateway.BodyCodecKey), because each listener has
// its own descriptor set.
const ProtobufName = "protobuf"

// ErrNoMessage is wrapped by Resolve, Decode and Encode for a message name
// the descriptor set does not define.
var ErrNoMessage = errors.New("no such message in the descriptor set")

// Protobuf is the `body: protobuf` codec of one FileDescriptorSet. Bodies map
// to the same Lua values as JSON through protobuf's JSON mapping, as SPEC §8
// fixes it:
//
//   - Decoding: wire bytes -> dynamicpb message -> protojson with the proto
//     field names (not lowerCamelCase), enums by name, 64-bit integers as
//     decimal strings, bytes as base64, well-known types in their JSON forms,
//     and unpopulated fields absent -> DecodeJSON. So repeated fields are
//     marked arrays, maps are tables with string keys (map<int32, T> keys
//     too, as the JSON mapping writes them), a proto3 field holding its
//     zero value is absent unless it has explicit presence (`optional`).
//   - Unknown fields, which a newer client's body may carry, are dropped on
//     decode: the JSON mapping cannot represent them, and a handler could
//     not pass them on anyway, since every response is built from a fresh
//     Lua table.
//   - Encoding: AppendJSON -> protojson -> deterministic wire bytes
//     (map entries sorted). Either field-name form (player_id or playerId),
//     enum names or numbers, and 64-bit integers as numbers or decimal
//     strings are accepted; a key the message does not have, a value of the
//     wrong type and a proto2 required field left out are errors (the
//     handler fails). Where the message knows better than the table, the
//     message decides: an empty table in a repeated field is an empty
//     list, and a map field's table keyed 1..n is a map, not a list.
//   - A nil value encodes as the empty message (no bytes); an empty body
//     decodes as the message with every field unset, an empty table.
//   - SPEC's JSON rules apply on the way to Lua, as for any JSON body: a
//     float's -0 arrives as 0 (so a proto3 field holding -0 comes back
//     unset), NaN and the infinities arrive as the strings "NaN",
//     "Infinity" and "-Infinity", and a google.protobuf.Value number above
//     2^53 arrives as a decimal string (and is sent back as a string).
//
// Decode errors are *codes.Error values with code client_rpc.decode_failed.
// A Protobuf is read-only after NewProtobuf, so every VM may share it.
type Protobuf struct {
	name     string
	source   string    // the descriptor set's path, in messages
	resolver *resolver // every message type, built once at load
}

var _ Codec = (*Protobuf)(nil)

// NewProtobuf loads the FileDescriptorSet at path, as
// `protoc --include_imports --descriptor_set_out=PATH` writes it. Every file
// the set's files import must be in the set (hence --include_imports).
func NewProtobuf(descriptorSetPath string) (*Protobuf, error) {
	data, err := os.ReadFile(descriptorSetPath)
	if err != nil {
		return nil, fmt.Errorf("descriptor set: %w", err)
	}
	var set descriptorpb.FileDescriptorSet
	if err := proto.Unmarshal(data, &set); err != nil {
		return nil, fmt.Errorf("descriptor set %s: not a FileDescriptorSet: %w", descriptorSetPath, err)
	}
	return NewProtobufFromSet(&set, descriptorSetPath)
}

// NewProtobufFromSet builds the codec from a decoded set; source names the
// set in error messages (its path, usually). It is for programs that embed
// their descriptors rather than ship a file.
func NewProtobufFromSet(set *descriptorpb.FileDescriptorSet, source string) (*Protobuf, error) {
	files, err := protodesc.NewFiles(set)
	if err != nil {
		return nil, fmt.Errorf("descriptor set %s: %w (a set needs every imported file: protoc --include_imports)", source, err)
	}
	return &Protobuf{name: ProtobufName, source: source, resolver: newResolver(files)}, nil
}

// WithName returns a copy of p that reports name from Name, to be
// registered under it: one loaded set may serve several listeners, each
// under its own key. The copies share the read-only descriptors.
func (p *Protobuf) WithName(name string) *Protobuf {
	q := *p
	q.name = name
	return &q
}

// Name is the name the codec is registered under.
func (p *Protobuf) Name() string { return p.name }

// Source is the descriptor set the codec was loaded from.
func (p *Protobuf) Source() string { return p.source }

// Resolve checks that fullName is a message of the set (not an enum, a
// service or a map entry). The runtime calls it at start for every route,
// so that a missing message fails the start instead of a request.
func (p *Protobuf) Resolve(fullName string) error {
	_, err := p.messageType(fullName)
	return err
}

// messageType finds a message's type by its full name.
func (p *Protobuf) messageType(name string) (protoreflect.MessageType, error) {
	if mt, ok := p.resolver.messages[protoreflect.FullName(name)]; ok {
		return mt, nil
	}
	return nil, fmt.Errorf("%w: %q in %s", ErrNoMessage, name, p.source)
}

// Decode decodes body as the message schema names (a full name) into a Lua
// value as the type comment describes. The result never aliases body.
func (p *Protobuf) Decode(L *lua.LState, schema string, body []byte) (lua.LValue, error) {
	mt, err := p.messageType(schema)
	if err != nil {
		return lua.LNil, decodeFailed(schema, err.Error())
	}
	m := mt.New().Interface()
	// DecodeJSON refuses values nested deeper than MaxDepth, so the wire
	// decoder need not go to its default of 10000 levels either. A JSON
	// level may take up to three message levels (a Struct holds a map
	// entry holding a Value holding the next Struct), hence the factor.
	// Required fields are checked once, by protojson below (AllowPartial
	// here skips a second walk).
	uo := proto.UnmarshalOptions{DiscardUnknown: true, AllowPartial: true, RecursionLimit: 3 * MaxDepth, Resolver: p.resolver}
	if err := unmarshalSafely(uo, body, m); err != nil {
		return lua.LNil, decodeFailed(schema, trimProto(err))
	}
	st := stateOf(L)
	// EmitUnpopulated is false: SPEC's "unpopulated fields absent".
	mo := protojson.MarshalOptions{UseProtoNames: true, Resolver: p.resolver}
	js, err := mo.MarshalAppend(st.out[:0], m)
	if err != nil {
		// The wire form held what JSON cannot: invalid UTF-8 in a proto2
		// string, or an Any of a type the set does not define.
		return lua.LNil, decodeFailed(schema, trimProto(err))
	}
	v, err := DecodeJSON(L, js)
	keepOut(st, js)
	if err != nil {
		var de *DecodeError
		if errors.As(err, &de) {
			return lua.LNil, decodeFailed(schema, de.Reason)
		}
		return lua.LNil, decodeFailed(schema, err.Error())
	}
	return v, nil
}

// Encode encodes v as the message schema names, deterministically, into a
// new slice. Errors are plain errors for the handler's author.
func (p *Protobuf) Encode(L *lua.LState, schema string, v lua.LValue) ([]byte, error) {
	mt, err := p.messageType(schema)
	if err != nil {
		return nil, fmt.Errorf("protobuf encode: %w", err)
	}
	if v == lua.LNil || v == nil {
		return []byte{}, nil
	}
	st := stateOf(L)
	js, err := appendJSONShaped(st.out[:0], L, v, shapesFor(L, mt.Descriptor(), v))
	if err != nil {
		return nil, fmt.Errorf("protobuf encode %s: %w", schema, err)
	}
	m := mt.New().Interface()
	uo := protojson.UnmarshalOptions{Resolver: p.resolver, RecursionLimit: MaxDepth}
	err = uo.Unmarshal(js, m)
	keepOut(st, js)
	if err != nil {
		return nil, fmt.Errorf("protobuf encode %s: %s", schema, trimProto(err))
	}
	// protojson checked the required fields; the marshal need not again.
	b, err := proto.MarshalOptions{Deterministic: true, AllowPartial: true}.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("protobuf encode %s: %s", schema, trimProto(err))
	}
	return b, nil
}

// keepOut keeps a grown scratch buffer for the next body, unless one large
// body grew it past what a VM should hold on to.
func keepOut(st *vmState, b []byte) {
	if cap(b) <= maxKeptBytes {
		st.out = b[:0]
	}
}

// decodeFailed is the client-visible error of a body that is not a valid
// message: "protobuf <message>: <reason>".
func decodeFailed(schema, reason string) error {
	return &codes.Error{Code: codes.DecodeFailed, Message: "protobuf " + schema + ": " + reason}
}

// trimProto is err's text without protobuf-go's "proto: " prefix, which
// says nothing to a client and which the library writes with a regular or a
// non-breaking space at random (to stop callers matching on it; nothing
// here decides by the text either).
func trimProto(err error) string {
	s := strings.TrimPrefix(err.Error(), "proto: ")
	s = strings.TrimPrefix(s, "proto:\u00a0")
	return s
}

// resolver finds a descriptor set's message types, each built once at load,
// and its extensions; protojson needs it for google.protobuf.Any.
type resolver struct {
	messages map[protoreflect.FullName]protoreflect.MessageType // read-only after newResolver
	ext      *dynamicpb.Types
}

var (
	_ protoregistry.MessageTypeResolver   = (*resolver)(nil)
	_ protoregistry.ExtensionTypeResolver = (*resolver)(nil)
)

func newResolver(files *protoregistry.Files) *resolver {
	r := &resolver{messages: map[protoreflect.FullName]protoreflect.MessageType{}, ext: dynamicpb.NewTypes(files)}
	var add func(protoreflect.MessageDescriptors)
	add = func(mds protoreflect.MessageDescriptors) {
		for i := 0; i < mds.Len(); i++ {
			md := mds.Get(i)
			if !md.IsMapEntry() {
				r.messages[md.FullName()] = dynamicpb.NewMessageType(md)
			}
			add(md.Messages())
		}
	}
	files.RangeFiles(func(fd protoreflect.FileDescriptor) bool {
		add(fd.Messages())
		return true
	})
	return r
}

// FindMessageByName returns the type built at load.
func (r *resolver) FindMessageByName(name protoreflect.FullName) (protoreflect.MessageType, error) {
	if mt, ok := r.messages[name]; ok {
		return mt, nil
	}
	return nil, protoregistry.NotFound
}

// FindMessageByURL resolves an Any's type URL: its text after the last '/'.
func (r *resolver) FindMessageByURL(url string) (protoreflect.MessageType, error) {
	if i := strings.LastIndexByte(url, '/'); i >= 0 {
		url = url[i+1:]
	}
	return r.FindMessageByName(protoreflect.FullName(url))
}

// FindExtensionByName delegates to dynamicpb.
func (r *resolver) FindExtensionByName(name protoreflect.FullName) (protoreflect.ExtensionType, error) {
	return r.ext.FindExtensionByName(name)
}

// FindExtensionByNumber delegates to dynamicpb.
func (r *resolver) FindExtensionByNumber(message protoreflect.FullName, field protoreflect.FieldNumber) (protoreflect.ExtensionType, error) {
	return r.ext.FindExtensionByNumber(message, field)
}

// unmarshalSafely is proto.Unmarshal that turns a panic into an error. The
// wire decoder of google.golang.org/protobuf v1.36 panics on some
// malformed map entries of dynamic messages ("cannot convert nil to map
// key", found by FuzzProtobufDecode); a client's bytes must never take a
// VM down, so such a body is decode_failed like any other bad body.
func unmarshalSafely(uo proto.UnmarshalOptions, body []byte, m proto.Message) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("malformed message (%v)", r)
		}
	}()
	return uo.Unmarshal(body, m)
}
