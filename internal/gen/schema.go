package gen

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Kind is the shape of a body type, as far as the generator maps JSON
// Schema. Anything it does not map is Unknown: `unknown` in TypeScript,
// json.RawMessage in Go. A stub that claims less than it knows is still
// right; one that claims more would lie to the compiler.
type Kind uint8

// The kinds of Type.
const (
	Unknown Kind = iota // anything: $ref, oneOf/anyOf/allOf, several types, no schema
	String
	Number
	Integer
	Boolean
	Null
	Object // Props
	Array  // Elem
	Map    // an object without properties: string keys, Elem values
	Bytes  // a protobuf message or a raw body: the caller encodes it
)

// Type is one body type, or part of one.
type Type struct {
	Kind     Kind
	Nullable bool     // "type": [T, "null"]
	Enum     []string // String, Number, Integer: the allowed values as JSON literals
	Props    []Prop   // Object, in the schema's order
	Elem     *Type    // Array items; Map values
	Doc      string   // title and description, or the protobuf message's name
}

// Prop is one property of an Object.
type Prop struct {
	Name     string // the JSON key
	Type     *Type
	Required bool
}

// unknown is the type of a body nothing describes.
func unknown() *Type { return &Type{Kind: Unknown} }

// schemaDoc is the subset of JSON Schema the generator reads. Properties
// stays raw so that its keys keep the file's order.
type schemaDoc struct {
	Title                string            `json:"title"`
	Description          string            `json:"description"`
	Type                 json.RawMessage   `json:"type"`
	Properties           json.RawMessage   `json:"properties"`
	Required             []string          `json:"required"`
	Enum                 []json.RawMessage `json:"enum"`
	Items                json.RawMessage   `json:"items"`
	AdditionalProperties json.RawMessage   `json:"additionalProperties"`
	Ref                  string            `json:"$ref"`
	OneOf                []json.RawMessage `json:"oneOf"`
	AnyOf                []json.RawMessage `json:"anyOf"`
	AllOf                []json.RawMessage `json:"allOf"`
}

// maxDepth bounds nesting: a schema deeper than this is Unknown below it.
const maxDepth = 32

// readSchema maps the JSON Schema file at path, or returns (nil, nil) when
// there is no such file.
func readSchema(path string) (*Type, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	t, err := mapSchema(data, 0)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.ToSlash(path), err)
	}
	return t, nil
}

// mapSchema maps one schema (an object, or true/false) to a Type.
func mapSchema(data []byte, depth int) (*Type, error) {
	data = bytes.TrimSpace(data)
	if depth > maxDepth || len(data) == 0 || data[0] != '{' {
		return unknown(), nil // true, false, or too deep
	}
	var s schemaDoc
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("not a JSON Schema: %w", err)
	}
	doc := strings.TrimSpace(strings.Join(nonEmpty(s.Title, s.Description), ": "))
	// A oneOf or anyOf whose branches only say which properties must be
	// there ({"anyOf": [{"required": ["user"]}, {"required": ["token"]}]})
	// does not change the shape: the properties are optional.
	if onlyRequired(s.OneOf) && onlyRequired(s.AnyOf) {
		s.OneOf, s.AnyOf = nil, nil
	}
	if s.Ref != "" || len(s.OneOf) > 0 || len(s.AnyOf) > 0 || len(s.AllOf) > 0 {
		return &Type{Kind: Unknown, Doc: doc}, nil
	}
	types, err := schemaTypes(s.Type)
	if err != nil {
		return nil, err
	}
	nullable := false
	if len(types) == 2 && (types[0] == "null" || types[1] == "null") {
		nullable = true
		if types[0] == "null" {
			types = types[1:]
		} else {
			types = types[:1]
		}
	}
	if len(types) == 0 {
		switch {
		case len(s.Properties) > 0:
			types = []string{"object"}
		case len(s.Enum) > 0 && allStrings(s.Enum):
			types = []string{"string"}
		}
	}
	if len(types) != 1 {
		return &Type{Kind: Unknown, Doc: doc}, nil
	}
	t := &Type{Nullable: nullable, Doc: doc}
	switch types[0] {
	case "string":
		t.Kind = String
	case "number":
		t.Kind = Number
	case "integer":
		t.Kind = Integer
	case "boolean":
		t.Kind = Boolean
	case "null":
		t.Kind, t.Nullable = Null, false
	case "array":
		t.Kind = Array
		if t.Elem, err = mapSchema(s.Items, depth+1); err != nil {
			return nil, err
		}
	case "object":
		if err := mapObject(t, &s, depth); err != nil {
			return nil, err
		}
	default:
		t.Kind = Unknown
	}
	if len(s.Enum) > 0 {
		t.Enum = enumOf(t.Kind, s.Enum)
	}
	return t, nil
}

// onlyRequired reports whether every branch is an object of "required"
// alone (true for no branches).
func onlyRequired(branches []json.RawMessage) bool {
	for _, b := range branches {
		var m map[string]json.RawMessage
		if json.Unmarshal(b, &m) != nil {
			return false
		}
		for k := range m {
			if k != "required" {
				return false
			}
		}
	}
	return true
}

// mapObject fills an object type: its properties in the file's order, or,
// without properties, a map of additionalProperties' type.
func mapObject(t *Type, s *schemaDoc, depth int) error {
	keys, values, err := orderedObject(s.Properties)
	if err != nil {
		return fmt.Errorf("properties: %w", err)
	}
	if len(keys) == 0 && string(bytes.TrimSpace(s.AdditionalProperties)) == "false" {
		t.Kind = Object // {}: nothing at all
		return nil
	}
	if len(keys) == 0 {
		t.Kind = Map
		t.Elem = unknown()
		if len(s.AdditionalProperties) > 0 {
			if t.Elem, err = mapSchema(s.AdditionalProperties, depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	t.Kind = Object
	required := map[string]bool{}
	for _, r := range s.Required {
		required[r] = true
	}
	for i, k := range keys {
		pt, err := mapSchema(values[i], depth+1)
		if err != nil {
			return fmt.Errorf("properties.%s: %w", k, err)
		}
		t.Props = append(t.Props, Prop{Name: k, Type: pt, Required: required[k]})
	}
	return nil
}

// schemaTypes reads "type": a string or an array of strings.
func schemaTypes(raw json.RawMessage) ([]string, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return []string{one}, nil
	}
	var many []string
	if err := json.Unmarshal(raw, &many); err != nil {
		return nil, fmt.Errorf("type: %w", err)
	}
	return many, nil
}

// enumOf keeps the enum values that fit kind, as JSON literals; a value
// of another kind makes the whole enum unusable (nil: the plain kind).
func enumOf(kind Kind, values []json.RawMessage) []string {
	var out []string
	for _, v := range values {
		lit := string(bytes.TrimSpace(v))
		var ok bool
		switch kind {
		case String:
			var s string
			ok = json.Unmarshal(v, &s) == nil
			if ok {
				b, _ := json.Marshal(s)
				lit = string(b)
			}
		case Number, Integer:
			var f json.Number
			ok = json.Unmarshal(v, &f) == nil
		}
		if !ok {
			return nil
		}
		out = append(out, lit)
	}
	return out
}

func allStrings(values []json.RawMessage) bool {
	for _, v := range values {
		var s string
		if json.Unmarshal(v, &s) != nil {
			return false
		}
	}
	return true
}

// orderedObject reads a JSON object's keys in order with their raw values.
func orderedObject(raw json.RawMessage) (keys []string, values []json.RawMessage, err error) {
	if len(raw) == 0 {
		return nil, nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	tok, err := dec.Token()
	if err != nil {
		return nil, nil, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, nil, fmt.Errorf("not an object")
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, nil, err
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, nil, err
		}
		keys = append(keys, tok.(string))
		values = append(values, v)
	}
	return keys, values, nil
}

func nonEmpty(ss ...string) []string {
	var out []string
	for _, s := range ss {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}
