package codec

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/shieldrpc/shield/codes"
	"github.com/shieldrpc/shield/config"
	"github.com/shieldrpc/shield/descriptor"
)

// moveSchema has several keywords per property, so that one body can fail
// many of them at once.
const moveSchema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "required": ["x", "y"],
  "properties": {
    "x": {"type": "number", "minimum": -1000, "maximum": 1000},
    "y": {"type": "number"},
    "legs": {
      "type": "array",
      "maxItems": 12,
      "items": {"type": "object", "required": ["x"], "properties": {"x": {"type": "integer"}}}
    },
    "name": {"type": "string", "maxLength": 4, "pattern": "^[a-z]+$"},
    "a b": {"type": "string"},
    "c/d~e": {"type": "string"},
    "pos": {"$ref": "common.json#/$defs/vec"},
    "kind": {"oneOf": [{"const": "walk"}, {"type": "integer", "minimum": 10}]}
  },
  "additionalProperties": false
}`

const commonSchema = `{
  "$defs": {"vec": {"type": "object", "required": ["x"], "properties": {"x": {"type": "number"}}}}
}`

// writeSchemas writes name -> content as files in a new folder.
func writeSchemas(t testing.TB, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// route is a c2s decode_local route as the merge builds it.
func route(id uint32, name, schema string) descriptor.Route {
	return descriptor.Route{ID: id, Name: name, RequestSchema: schema, Direction: config.C2S, Action: config.DecodeLocal,
		File: "actors.yaml", Line: int(id)}
}

func newMoveSchemas(t testing.TB) *Schemas {
	t.Helper()
	dir := writeSchemas(t, map[string]string{"move.json": moveSchema, "common.json": commonSchema})
	s, err := NewSchemas(dir, []descriptor.Route{route(1, "move", ""), route(2, "login", "")})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestSchemaViolationMessages: SPEC §6's "<pointer>: <reason>", from the
// failure with the smallest pointer, then keyword path.
func TestSchemaViolationMessages(t *testing.T) {
	s := newMoveSchemas(t)
	legs := func(bad ...int) string {
		var b strings.Builder
		for i := range 12 {
			if i > 0 {
				b.WriteByte(',')
			}
			x := "1"
			for _, j := range bad {
				if i == j {
					x = `"no"`
				}
			}
			fmt.Fprintf(&b, `{"x":%s}`, x)
		}
		return `{"x":1,"y":2,"legs":[` + b.String() + `]}`
	}
	for _, tc := range []struct{ body, want string }{
		{`{"x":1,"y":2}`, ""},
		{`{"x":1.5,"y":-2,"legs":[{"x":3}],"name":"ab","pos":{"x":0},"kind":"walk"}`, ""},
		{`{"x":"far","y":2}`, "/x: expected number, but got string"},
		{`{"y":2}`, "/: missing properties: 'x'"},
		{`{}`, "/: missing properties: 'x', 'y'"},
		{`[]`, "/: expected object, but got array"},
		{`null`, "/: expected object, but got null"},
		{`{"x":5000,"y":2}`, "/x: must be <= 1000 but found 5000"},
		// Several failures: the whole body's comes first.
		{`{"x":"a"}`, "/: missing properties: 'y'"},
		{`{"x":"a","y":"b"}`, "/x: expected number, but got string"},
		{`{"x":1,"y":2,"b":1,"a":2,"zz":3}`, "/: additionalProperties 'a', 'b', 'zz' not allowed"},
		// Array indices compare as numbers: /legs/2 before /legs/10.
		{legs(10, 2), "/legs/2/x: expected integer, but got string"},
		{`{"x":1,"y":2,"legs":[{"x":1},{"x":1.5},{}]}`, "/legs/1/x: expected integer, but got number"},
		{`{"x":1,"y":2,"legs":[{},{"x":1.5}]}`, "/legs/0: missing properties: 'x'"},
		// Two keywords fail on one value: the keyword path decides.
		{`{"x":1,"y":2,"name":"ABCDEF"}`, "/name: length must be <= 4, but got 6"},
		{`{"x":1,"y":2,"a b":1}`, "/a b: expected string, but got number"},
		{`{"x":1,"y":2,"c/d~e":1}`, "/c~1d~0e: expected string, but got number"},
		{`{"x":1,"y":2,"pos":{"x":"1"}}`, "/pos/x: expected number, but got string"},
		// oneOf fails in each branch: the first branch's keyword path wins.
		{`{"x":1,"y":2,"kind":5}`, `/kind: value must be "walk"`},
		{`{"x":1,"y":2,"kind":"run"}`, `/kind: value must be "walk"`},
		{`{"x":18446744073709551616,"y":2}`, "/x: must be <= 1000 but found 18446744073709551616"},
	} {
		t.Run(tc.body, func(t *testing.T) {
			// Go's map order varies between runs of the validator: the
			// message must not.
			for range 20 {
				err := s.Validate(1, []byte(tc.body))
				if tc.want == "" {
					if err != nil {
						t.Fatalf("valid body refused: %v", err)
					}
					return
				}
				var ce *codes.Error
				if !errors.As(err, &ce) || ce.Code != codes.SchemaViolation {
					t.Fatalf("error %v is not %s", err, codes.SchemaViolation)
				}
				if ce.Message != tc.want {
					t.Fatalf("message\n got %q\nwant %q", ce.Message, tc.want)
				}
			}
		})
	}
}

// TestSchemaNotJSON: a body that is not one JSON value reaches the handler
// as a string (SPEC §2), and is validated as that string (SPEC §6): the
// move schema wants an object, so every one is a violation at "/".
func TestSchemaNotJSON(t *testing.T) {
	s := newMoveSchemas(t)
	for _, body := range []string{"", "hello", `{"x":1`, `{"x":1,"y":2} {}`, `{"x":"a"} x`} {
		err := s.Validate(1, []byte(body))
		var ce *codes.Error
		if !errors.As(err, &ce) || ce.Code != codes.SchemaViolation || ce.Message != "/: expected object, but got string" {
			t.Errorf("%q: %v, want the string refused at /", body, err)
		}
	}
	// Whitespace around one value is still one value.
	if err := s.Validate(1, []byte(" {\"y\":1}\n")); err == nil {
		t.Error("a JSON body with whitespace was not validated")
	}
}

// TestSchemaRoutesWithout: a route without a file, an unknown route and a
// nil *Schemas validate nothing.
func TestSchemaRoutesWithout(t *testing.T) {
	s := newMoveSchemas(t)
	if s.Has(2) || s.Validate(2, []byte(`[]`)) != nil || s.Validate(99, []byte(`[]`)) != nil {
		t.Error("a route without a schema was validated")
	}
	if !s.Has(1) || !strings.HasSuffix(s.File(1), string(filepath.Separator)+"move.json") || s.File(2) != "" {
		t.Errorf("files %q %q", s.File(1), s.File(2))
	}
	var none *Schemas
	if none.Has(1) || none.File(1) != "" || none.Validate(1, []byte(`[]`)) != nil {
		t.Error("a nil *Schemas validated")
	}
}

// TestSchemaMessageNamesNoFile: no path reaches the client, even through a
// $ref into another file.
func TestSchemaMessageNamesNoFile(t *testing.T) {
	s := newMoveSchemas(t)
	for _, body := range []string{`{"x":1,"y":2,"pos":{}}`, `{"x":1,"y":2,"pos":[]}`, `{"x":1,"y":2,"kind":{}}`} {
		err := s.Validate(1, []byte(body))
		if err == nil || strings.Contains(err.Error(), "file:") || strings.Contains(err.Error(), ".json") {
			t.Errorf("%s: %v", body, err)
		}
	}
}

// TestNewSchemasErrors: every broken route is reported, naming its file.
func TestNewSchemasErrors(t *testing.T) {
	dir := writeSchemas(t, map[string]string{
		"broken.json":   `{"type": 5}`,
		"notjson.json":  `{"type": `,
		"badref.json":   `{"$ref": "missing.json"}`,
		"network.json":  `{"$ref": "https://example.com/s.json"}`,
		"move.json":     moveSchema,
		"common.json":   commonSchema,
		"shared.json":   `{"type": "object"}`,
		"notdraft.json": `{"$schema": "https://example.com/meta", "type": "object"}`,
	})
	raw := route(20, "raw", "nofile")
	raw.Action = config.ForwardRaw
	push := route(21, "push", "nofile")
	push.Direction = config.S2C
	text := route(22, "text", "nofile")
	text.RequestCodec = "raw"
	routes := []descriptor.Route{
		route(1, "a", "broken"),
		route(2, "b", "notjson"),
		route(3, "c", "absent"),
		route(4, "d", "broken"), // the same file again: reported once
		route(5, "e", "badref"),
		route(6, "f", "network"),
		route(7, "g", "../move"),
		route(8, "h", "notdraft"),
		route(10, "move", ""),
		route(11, "nofile", ""), // no request_schema, no file: fine
		route(12, "x", "shared"),
		route(13, "y", "shared"),
		raw, push, text, // never JSON-validated: their request_schema is not looked up
	}
	_, err := NewSchemas(dir, routes)
	var errs SchemaErrors
	if !errors.As(err, &errs) {
		t.Fatalf("error %v is not SchemaErrors", err)
	}
	want := []struct {
		id   uint32
		file string
		text string
	}{
		{1, "broken.json", "type"},
		{2, "notjson.json", "unexpected EOF"},
		{3, "absent.json", "file does not exist"},
		{5, "badref.json", "missing.json"},
		{6, "network.json", "only files are loaded"},
		{7, "../move.json", "not a plain file name"},
		{8, "notdraft.json", "only files are loaded"},
	}
	if len(errs) != len(want) {
		t.Fatalf("%d errors, want %d:\n%v", len(errs), len(want), err)
	}
	for i, w := range want {
		e := errs[i]
		if e.Route.ID != w.id || !strings.HasSuffix(e.File, string(filepath.Separator)+w.file) && e.File != filepath.Join(dir, w.file) ||
			!strings.Contains(e.Error(), w.text) || !strings.Contains(e.Error(), e.File) {
			t.Errorf("error %d: route %d file %s: %v; want route %d, %s, %q", i, e.Route.ID, e.File, e, w.id, w.file, w.text)
		}
	}
	if !errors.Is(errs[2], fs.ErrNotExist) {
		t.Errorf("a missing file does not unwrap to fs.ErrNotExist: %v", errs[2])
	}
}

func TestNewSchemasDir(t *testing.T) {
	if _, err := NewSchemas(filepath.Join(t.TempDir(), "none"), nil); err == nil || !strings.Contains(err.Error(), "schemas_dir") {
		t.Errorf("missing folder: %v", err)
	}
	file := filepath.Join(writeSchemas(t, map[string]string{"f.json": "{}"}), "f.json")
	if _, err := NewSchemas(file, nil); err == nil || !strings.Contains(err.Error(), "not a folder") {
		t.Errorf("a file as the folder: %v", err)
	}
}

// TestSchemasShareCompiled: routes naming one file share its schema.
func TestSchemasShareCompiled(t *testing.T) {
	dir := writeSchemas(t, map[string]string{"shared.json": `{"type": "object"}`})
	s, err := NewSchemas(dir, []descriptor.Route{route(1, "a", "shared"), route(2, "b", "shared")})
	if err != nil {
		t.Fatal(err)
	}
	if s.byRoute[1] != s.byRoute[2] {
		t.Error("the file was compiled twice")
	}
	if err := s.Validate(2, []byte(`1`)); err == nil || err.(*codes.Error).Message != "/: expected object, but got number" {
		t.Errorf("route 2: %v", err)
	}
}

// TestSchemaConcurrentValidate: VMs validate through one Schemas at once.
func TestSchemaConcurrentValidate(t *testing.T) {
	s := newMoveSchemas(t)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 200 {
				body := fmt.Sprintf(`{"x":%d,"y":2,"legs":[{"x":1},{"x":"%d"}],"b":1,"a":2}`, g*1000+i, i)
				err := s.Validate(1, []byte(body))
				if err == nil {
					t.Error("valid")
					return
				}
			}
		})
	}
	wg.Wait()
}

func TestSchemaName(t *testing.T) {
	r := route(1, "move", "")
	if SchemaName(&r) != "move" {
		t.Error(SchemaName(&r))
	}
	r.RequestSchema = "game.Move"
	if SchemaName(&r) != "game.Move" {
		t.Error(SchemaName(&r))
	}
}

// TestDecodeObservable: lazy_decode may skip only a decode nothing but
// req observes: a json or raw route without a schema; a protobuf decode
// (it can fail) and a schema (it can refuse) are always run.
func TestDecodeObservable(t *testing.T) {
	s := newMoveSchemas(t)
	plain := route(3, "plain", "") // no schema file
	raw := plain
	raw.Action = config.ForwardRaw
	rawCodec := plain
	rawCodec.RequestCodec = "raw"
	jsonCodec := plain
	jsonCodec.RequestCodec = JSONName
	move := route(1, "move", "")
	for _, c := range []struct {
		name string
		r    descriptor.Route
		key  string
		want bool
	}{
		{"json listener, no schema", plain, JSONName, false},
		{"empty key is json", plain, "", false},
		{"json listener, a schema", move, JSONName, true},
		{"protobuf listener", plain, "protobuf/pb", true},
		{"forward_raw", raw, "protobuf/pb", false},
		{"a raw request_codec", rawCodec, JSONName, false},
		{"request_codec json on a protobuf listener", jsonCodec, "protobuf/pb", false},
	} {
		if got := DecodeObservable(&c.r, c.key, s); got != c.want {
			t.Errorf("%s: DecodeObservable = %v, want %v", c.name, got, c.want)
		}
	}
	if DecodeObservable(&move, JSONName, nil) {
		t.Error("no schemas: a json decode is not observable")
	}
}
