// Package gen writes typed client stubs from a gateway's route table: the
// descriptor (config.Load, then descriptor.Merge) and, for the bodies, the
// routes' JSON Schemas or protobuf message names. `gateway gen` runs it.
//
// For every route the stubs have its id and name as constants; for each
// c2s (and bidi) route a call function with typed request and response;
// for each s2c (and bidi) route a push handler with a typed body. The
// TypeScript stubs import @shieldrpc/client, the Go ones
// github.com/shieldrpc/shield/client, the C# ones (cs.go) the Shield
// namespace of clients/csharp.
//
// Body types come from, in this order:
//   - with JSON bodies, the route's JSON Schema, <schema>.json in the
//     schemas folder (SPEC §2: the route's request_schema, else its name):
//     the request of a c2s route, the push of an s2c route, both of a bidi
//     one. A response has no schema in SPEC §2; the generator alone reads
//     <schema>.response.json for it when the file exists;
//   - with protobuf bodies, the message's name as a comment, and bytes the
//     caller encodes (SPEC §8: a response uses its request's message);
//   - otherwise unknown (TypeScript), json.RawMessage (Go) or the JSON
//     text (C#: a string for a body, Shield.Json.RawJson inside one).
//
// The JSON Schema mapping is small and says no more than it knows: type
// (one, or one and "null"), properties and required, enum, array items,
// and additionalProperties of an object without properties. $ref, oneOf,
// anyOf, allOf and anything else map to unknown.
package gen

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"unicode"

	"github.com/shieldrpc/shield/config"
	"github.com/shieldrpc/shield/descriptor"
)

// Options say what to generate.
type Options struct {
	// Lang is ts, go or cs.
	Lang string
	// Package is the Go package name; default "routes". For cs it is the
	// namespace, when it is a dotted C# name; default Shield.Routes.
	Package string
	// Body is the body codec the stubs speak: json, protobuf or raw.
	// Default: the first listener's body codec (json without listeners).
	Body string
	// SchemasDir overrides the config's network.schemas_dir.
	SchemasDir string
	// Source names the config in the generated header, as the user should
	// see it (a path relative to the repository, say); default cfg.File.
	Source string
}

// Output is one generated file.
type Output struct {
	Name string // the file name, without a folder
	Data []byte
}

// route is one route as the stubs present it.
type route struct {
	descriptor.Route
	Ident    string // PascalCase identifier: Login, JoinRoom, Route3001
	Func     string // the TypeScript call function: login, joinRoom, route3001
	Call     bool   // c2s or bidi: a call function
	Push     bool   // s2c or bidi: a push handler
	Req      *Type  // Call
	Resp     *Type  // Call
	PushBody *Type  // Push
	Schema   string // the schema or message name the types come from, "" when none
}

// Generate writes the stubs for cfg's merged table.
func Generate(cfg *config.Config, table *descriptor.Table, o Options) ([]Output, error) {
	if o.Package == "" {
		o.Package = "routes"
	}
	if o.Body == "" {
		o.Body = "json"
		if len(cfg.Network.Listeners) > 0 {
			o.Body = cfg.Network.Listeners[0].Protocol.Body
		}
	}
	if o.SchemasDir == "" {
		o.SchemasDir = cfg.Network.SchemasDir
	}
	if o.Source == "" {
		o.Source = filepath.ToSlash(cfg.File)
	}
	routes, err := model(table, o)
	if err != nil {
		return nil, err
	}
	switch o.Lang {
	case "ts":
		return []Output{{Name: "routes.ts", Data: writeTS(routes, o)}}, nil
	case "go":
		data, err := writeGo(routes, o)
		if err != nil {
			return nil, err
		}
		return []Output{{Name: "routes.go", Data: data}}, nil
	case "cs":
		return []Output{{Name: "Routes.cs", Data: writeCS(routes, o)}}, nil
	default:
		return nil, fmt.Errorf("gen: unknown language %q (want ts, go or cs)", o.Lang)
	}
}

// model gives every route its identifier and body types.
func model(table *descriptor.Table, o Options) ([]route, error) {
	var out []route
	seen, seenTS := map[string]bool{}, map[string]bool{}
	for _, r := range table.Routes() {
		if r.Action == config.Drop {
			continue // the gateway drops it: nothing to call
		}
		if r.IsRoomRoute() {
			continue // Shield's own room routes: the SDKs' room API covers them (docs/rooms.md §8.1)
		}
		rt := route{Route: r, Call: r.Direction != config.S2C, Push: r.Direction != config.C2S}
		rt.Ident = pascal(r.Name)
		if rt.Ident == "" || !unicode.IsLetter([]rune(rt.Ident)[0]) {
			rt.Ident = fmt.Sprintf("Route%d%s", r.ID, rt.Ident)
		}
		if seen[rt.Ident] {
			// Two names that differ only in punctuation (join-room, join_room).
			rt.Ident = fmt.Sprintf("%s%d", rt.Ident, r.ID)
		}
		seen[rt.Ident] = true
		rt.Func = camel(r.Name)
		if rt.Func == "" || !unicode.IsLetter([]rune(rt.Func)[0]) {
			rt.Func = fmt.Sprintf("route%d%s", r.ID, rt.Ident[len(fmt.Sprintf("Route%d", r.ID)):])
		}
		if seenTS[rt.Func] || tsReserved[rt.Func] {
			rt.Func = fmt.Sprintf("%s%d", rt.Func, r.ID)
		}
		seenTS[rt.Func] = true
		if err := bodies(&rt, o); err != nil {
			return nil, err
		}
		out = append(out, rt)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// bodies sets a route's body types as the package comment says.
func bodies(rt *route, o Options) error {
	rt.Req, rt.Resp, rt.PushBody = unknown(), unknown(), unknown()
	name := rt.RequestSchema
	if name == "" {
		name = rt.Name
	}
	rawRoute := rt.Action == config.ForwardRaw || (rt.RequestCodec != "" && rt.RequestCodec != "json")
	switch {
	case o.Body == "protobuf" && name != "":
		rt.Schema = name
		msg := func() *Type { return &Type{Kind: Bytes, Doc: "protobuf message " + name} }
		rt.Req, rt.Resp, rt.PushBody = msg(), msg(), msg()
	case o.Body == "raw":
		rt.Req, rt.Resp, rt.PushBody = &Type{Kind: Bytes}, &Type{Kind: Bytes}, &Type{Kind: Bytes}
	case o.Body == "json" && o.SchemasDir != "" && name != "" && name == filepath.Base(name):
		t, err := readSchema(filepath.Join(o.SchemasDir, name+".json"))
		if err != nil {
			return err
		}
		if t != nil {
			rt.Schema = name
			if rt.Push {
				rt.PushBody = t
			}
			if rt.Call && !rawRoute {
				rt.Req = t
			}
		}
		if rt.Call {
			resp, err := readSchema(filepath.Join(o.SchemasDir, name+".response.json"))
			if err != nil {
				return err
			}
			if resp != nil {
				rt.Resp = resp
				if rt.Schema == "" {
					rt.Schema = name
				}
			}
		}
	}
	return nil
}

// pascal turns a name (snake_case, kebab-case, dotted) into an exported
// identifier, Go's initialisms in capitals: join_room -> JoinRoom,
// player_id -> PlayerID.
func pascal(name string) string {
	var b strings.Builder
	words := strings.FieldsFunc(name, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	for _, w := range words {
		if initialisms[strings.ToLower(w)] {
			b.WriteString(strings.ToUpper(w))
			continue
		}
		r := []rune(w)
		r[0] = unicode.ToUpper(r[0])
		b.WriteString(string(r))
	}
	return b.String()
}

// initialisms are the words Go spells in capitals.
var initialisms = map[string]bool{"id": true, "url": true, "uri": true, "http": true, "json": true,
	"ip": true, "api": true, "uuid": true, "ui": true, "ttl": true, "xml": true}

// camel is a name as a TypeScript identifier: join_room -> joinRoom,
// player_id -> playerId.
func camel(name string) string {
	var b strings.Builder
	words := strings.FieldsFunc(name, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	for i, w := range words {
		r := []rune(w)
		if i == 0 {
			r[0] = unicode.ToLower(r[0])
		} else {
			r[0] = unicode.ToUpper(r[0])
		}
		b.WriteString(string(r))
	}
	return b.String()
}

// comment writes doc as comment lines with prefix ("// " or " * ").
func comment(b *strings.Builder, indent, prefix, doc string) {
	for _, line := range strings.Split(strings.TrimSpace(doc), "\n") {
		line = strings.TrimRight(line, " \t")
		if line == "" {
			fmt.Fprintf(b, "%s%s\n", indent, strings.TrimRight(prefix, " "))
			continue
		}
		fmt.Fprintf(b, "%s%s%s\n", indent, prefix, line)
	}
}

// direction is the route's direction as SPEC §2 spells it.
func direction(d config.Direction) string {
	switch d {
	case config.S2C:
		return "s2c"
	case config.Bidi:
		return "bidi"
	default:
		return "c2s"
	}
}

// PackageName makes a folder's name a Go package name: lower case letters
// and digits only, not starting with a digit ("routes" when nothing is left).
func PackageName(dir string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(dir) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' && b.Len() > 0 {
			b.WriteRune(r)
		}
	}
	if b.Len() == 0 {
		return "routes"
	}
	return b.String()
}

// about names a route for a doc comment: "join_room (route 2002, c2s, owner player)".
func about(r route) string {
	return fmt.Sprintf("%s (route %d, %s, owner %s)", routeKey(r), r.ID, direction(r.Direction), r.Owner)
}
