package codec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v5"

	"github.com/shieldrpc/shield/codes"
	"github.com/shieldrpc/shield/descriptor"
)

// Schemas holds the compiled JSON Schemas of the routes that have one
// (SPEC §2 network.schemas_dir, §6 schema_violation), for json listeners.
// It is read-only after NewSchemas, so every VM may validate through it at
// once.
//
// A route's schema is the file <request_schema>.json in the schemas folder,
// or <name>.json when request_schema is empty. Schemas without "$schema"
// are read as draft 2020-12. "format" is an annotation, as 2020-12 says,
// and no schema is fetched over the network: a "$ref" reaches only files.
type Schemas struct {
	dir     string
	byRoute map[uint32]*routeSchema // read-only after NewSchemas
}

// routeSchema is one route's compiled schema and the file it came from.
type routeSchema struct {
	file   string
	schema *jsonschema.Schema
}

// SchemaName is the name a route's body is described by: its
// request_schema, else its name (SPEC §2). It is the JSON Schema file's
// name without ".json", or the protobuf message's full name.
func SchemaName(r *descriptor.Route) string {
	if r.RequestSchema != "" {
		return r.RequestSchema
	}
	return r.Name
}

// SchemaError is a route whose schema cannot be used: its explicit
// request_schema names no file, or its file does not compile. NewSchemas
// returns every one it finds, as SchemaErrors.
type SchemaError struct {
	Route *descriptor.Route // the route whose schema it is (one of them, when routes share a file)
	File  string            // the schema file, as found in the folder
	Err   error
}

// Error names the route and the file.
func (e *SchemaError) Error() string {
	return e.Route.Label() + ": schema " + e.File + ": " + e.Err.Error()
}

// Unwrap returns the cause: fs.ErrNotExist for a missing file, or the
// validator's *jsonschema.SchemaError.
func (e *SchemaError) Unwrap() error { return e.Err }

// SchemaErrors is every SchemaError of one NewSchemas, in route order.
type SchemaErrors []*SchemaError

// Error joins the errors one per line.
func (es SchemaErrors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// NewSchemas compiles the schemas of routes from dir. Only routes for which
// Validated holds are considered. A route with no request_schema and no
// <name>.json is not validated; a route whose explicit request_schema has
// no file, and a file that does not compile, are errors naming the file.
// All of them are returned, as SchemaErrors. Routes sharing a schema share
// its compiled form, and "$ref"s between files in dir are followed.
func NewSchemas(dir string, routes []descriptor.Route) (*Schemas, error) {
	if info, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("schemas_dir: %w", err)
	} else if !info.IsDir() {
		return nil, fmt.Errorf("schemas_dir %s: not a folder", dir)
	}
	s := &Schemas{dir: dir, byRoute: map[uint32]*routeSchema{}}
	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft2020
	// Only files: a schema must not make the start depend on a network.
	c.LoadURL = loadFileURL

	compiled := map[string]*routeSchema{} // by file
	failed := map[string]bool{}           // files already reported
	var errs SchemaErrors
	for i := range routes {
		r := &routes[i]
		name := SchemaName(r)
		if !Validated(r) || name == "" {
			continue
		}
		file, err := schemaFile(dir, name)
		if err != nil {
			errs = append(errs, &SchemaError{Route: r, File: filepath.Join(dir, name+".json"), Err: err})
			continue
		}
		if rs, ok := compiled[file]; ok {
			s.byRoute[r.ID] = rs
			continue
		}
		if failed[file] {
			continue
		}
		if _, err := os.Stat(file); err != nil {
			if errors.Is(err, fs.ErrNotExist) && r.RequestSchema == "" {
				continue // SPEC: a route without a schema file is not validated
			}
			if errors.Is(err, fs.ErrNotExist) {
				err = fs.ErrNotExist // the *PathError would name the file again
			}
			failed[file] = true
			errs = append(errs, &SchemaError{Route: r, File: file, Err: err})
			continue
		}
		sch, err := c.Compile(file)
		if err != nil {
			failed[file] = true
			errs = append(errs, &SchemaError{Route: r, File: file, Err: schemaCause(err)})
			continue
		}
		rs := &routeSchema{file: file, schema: sch}
		compiled[file] = rs
		s.byRoute[r.ID] = rs
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return s, nil
}

// schemaFile is the file of schema name in dir. A name is a file name, not
// a path: one that would leave dir is an error.
func schemaFile(dir, name string) (string, error) {
	if name != filepath.Base(name) || name == "." || name == ".." || strings.ContainsRune(name, '\\') {
		return "", fmt.Errorf("schema name %q is not a plain file name", name)
	}
	abs, err := filepath.Abs(filepath.Join(dir, name+".json"))
	if err != nil {
		return "", err
	}
	return abs, nil
}

// schemaCause is a compile error without the validator's "jsonschema
// file:///... compilation failed:" wrapping, which repeats the file the
// SchemaError already names.
func schemaCause(err error) error {
	var se *jsonschema.SchemaError
	if errors.As(err, &se) && se.Err != nil {
		return se.Err
	}
	return err
}

// loadFileURL opens file: URLs only.
func loadFileURL(s string) (io.ReadCloser, error) {
	u, err := url.Parse(s)
	if err != nil {
		return nil, err
	}
	if u.Scheme != "file" {
		return nil, fmt.Errorf("schema %q: only files are loaded", s)
	}
	return os.Open(filepath.FromSlash(u.Path))
}

// Has reports whether route's requests are validated.
func (s *Schemas) Has(route uint32) bool {
	if s == nil {
		return false
	}
	_, ok := s.byRoute[route]
	return ok
}

// File is the schema file that validates route, or "" for none (for
// `gateway check`).
func (s *Schemas) File(route uint32) string {
	if s == nil {
		return ""
	}
	if rs, ok := s.byRoute[route]; ok {
		return rs.file
	}
	return ""
}

// Validate checks a JSON request body of route against the route's
// schema. It returns nil when the route has no schema and when the body is
// valid. A body that is not JSON is validated as the JSON string holding
// its bytes, which is what a json route's handler gets for it (SPEC §6);
// DecodeRequest validates the empty body, which the handler gets as nil,
// as null.
//
// The body is parsed with encoding/json and UseNumber, so numbers keep
// their exact text for the validator (a 2^63 stays 2^63). A violation is
// a *codes.Error with code client_rpc.schema_violation and SPEC §6's
// message "<pointer>: <reason>": among the failures with no more specific
// cause, the one with the smallest instance pointer (segment by segment,
// array indices by number, a prefix first) and then the smallest keyword
// path, so that one body always gives the same message. The message
// names no file.
//
// A nil *Schemas validates nothing.
func (s *Schemas) Validate(route uint32, body []byte) error {
	if !s.Has(route) {
		return nil
	}
	v, ok := parseJSON(body)
	if !ok {
		return s.validateValue(route, string(body))
	}
	return s.validateValue(route, v)
}

// validateValue checks v, a value as encoding/json decodes it with
// UseNumber, against route's schema.
func (s *Schemas) validateValue(route uint32, v any) error {
	if s == nil {
		return nil
	}
	rs, ok := s.byRoute[route]
	if !ok {
		return nil
	}
	err := rs.schema.Validate(v)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if errors.As(err, &ve) {
		return &codes.Error{Code: codes.SchemaViolation, Message: violation(ve)}
	}
	// A schema whose $refs loop on this input: the body cannot be
	// accepted, and the validator's text would name the file.
	return &codes.Error{Code: codes.SchemaViolation, Message: "/: the schema cannot evaluate this value"}
}

// parseJSON decodes one JSON value with encoding/json and UseNumber, and
// reports whether body was exactly one.
func parseJSON(body []byte) (any, bool) {
	d := json.NewDecoder(bytes.NewReader(body))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, false
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, false
	}
	return v, true
}

// violation chooses the failure SPEC §6 reports and formats it.
func violation(ve *jsonschema.ValidationError) string {
	var leaves []*jsonschema.ValidationError
	var walk func(*jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			leaves = append(leaves, e)
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	type failure struct {
		ptr     []string
		keyword string
		reason  string
	}
	fs := make([]failure, len(leaves))
	for i, l := range leaves {
		fs[i] = failure{ptr: pointerSegments(l.InstanceLocation), keyword: l.KeywordLocation, reason: l.Message}
	}
	best := slices.MinFunc(fs, func(a, b failure) int {
		if c := comparePointers(a.ptr, b.ptr); c != 0 {
			return c
		}
		if c := strings.Compare(a.keyword, b.keyword); c != 0 {
			return c
		}
		return strings.Compare(a.reason, b.reason)
	})
	return formatPointer(best.ptr) + ": " + stableReason(best.keyword, best.reason)
}

// pointerSegments splits the validator's instance location into RFC 6901
// reference tokens. The validator percent-escapes each token on top of
// RFC 6901's escaping (a space is %20); the message wants the pointer
// itself, so that is undone.
func pointerSegments(loc string) []string {
	if loc == "" || loc == "/" {
		return nil
	}
	segs := strings.Split(strings.TrimPrefix(loc, "/"), "/")
	for i, s := range segs {
		if u, err := url.PathUnescape(s); err == nil {
			segs[i] = u
		}
	}
	return segs
}

// formatPointer joins tokens into a JSON Pointer, "/" for the whole body.
func formatPointer(segs []string) string {
	if len(segs) == 0 {
		return "/"
	}
	return "/" + strings.Join(segs, "/")
}

// comparePointers orders pointers token by token: two array indices by
// number (so /legs/2 comes before /legs/10), other tokens bytewise, and a
// pointer before the longer ones it is a prefix of.
func comparePointers(a, b []string) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] == b[i] {
			continue
		}
		x, errx := strconv.ParseUint(a[i], 10, 64)
		y, erry := strconv.ParseUint(b[i], 10, 64)
		if errx == nil && erry == nil && x != y {
			if x < y {
				return -1
			}
			return 1
		}
		return strings.Compare(a[i], b[i])
	}
	return len(a) - len(b)
}

// stableReason makes the validator's reason the same for the same body:
// "additionalProperties 'b', 'a' not allowed" lists the properties in Go
// map order, so they are sorted.
func stableReason(keyword, reason string) string {
	const pre, post = "additionalProperties ", " not allowed"
	if !strings.HasSuffix(keyword, "/additionalProperties") && keyword != "additionalProperties" {
		return reason
	}
	if !strings.HasPrefix(reason, pre) || !strings.HasSuffix(reason, post) {
		return reason
	}
	names, ok := splitQuoted(reason[len(pre) : len(reason)-len(post)])
	if !ok {
		return reason
	}
	slices.Sort(names)
	return pre + strings.Join(names, ", ") + post
}

// splitQuoted splits the validator's list of single-quoted names ('a',
// 'b\'c'), keeping each name's quotes and escapes as written.
func splitQuoted(s string) ([]string, bool) {
	var out []string
	for len(s) > 0 {
		if s[0] != '\'' {
			return nil, false
		}
		end := -1
		for i := 1; i < len(s); i++ {
			if s[i] == '\\' {
				i++
				continue
			}
			if s[i] == '\'' {
				end = i
				break
			}
		}
		if end < 0 {
			return nil, false
		}
		out = append(out, s[:end+1])
		s = s[end+1:]
		if len(s) > 0 {
			if !strings.HasPrefix(s, ", ") {
				return nil, false
			}
			s = s[2:]
		}
	}
	return out, true
}
