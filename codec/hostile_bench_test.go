package codec

import (
	"strings"
	"testing"

	"github.com/shieldrpc/shield/descriptor"
)

// The bodies an unauthenticated flood sends to a login route (issue 19):
// each one frame of session.auth_max_frame_bytes (8192, with the 8-byte
// idlen header), the most a session may send before it logs in. They
// measure what one such body costs the entry VM's goroutine, where
// DecodeRequest runs (luavm/handle.go decodeRequest): on the 2-core
// development machine about 250 us for the numbers, 490 us for the keys,
// and 1.0 to 1.4 ms with the login schema, whose validation (parse with
// encoding/json, then the validator) costs more than the decode.
var attackBodies = map[string]string{
	// 4,092 small numbers: one array entry each.
	"numbers": "[" + strings.Repeat("1,", 4090) + "1]",
	// One long string beside the user.
	"string": `{"user":"","pad":"` + strings.Repeat("x", 8184-len(`{"user":"","pad":""}`)) + `"}`,
	// Many short keys: one hash entry each.
	"keys": func() string {
		var b strings.Builder
		b.WriteString("{")
		for i := 0; b.Len() < 8170; i++ {
			if i > 0 {
				b.WriteString(",")
			}
			b.WriteString(`"k` + itoa(i) + `":1`)
		}
		b.WriteString("}")
		return b.String()
	}(),
}

func itoa(i int) string {
	const digits = "0123456789"
	if i < 10 {
		return digits[i : i+1]
	}
	return itoa(i/10) + digits[i%10:i%10+1]
}

// loginSchema is configs/schemas/login.json.
const loginSchema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "required": ["user"],
  "properties": {"user": {"type": "string", "minLength": 1, "maxLength": 64}}
}`

// loginSchemas is the example game's login route with its schema.
func loginSchemas(b *testing.B) (descriptor.Route, *Schemas) {
	r := route(1001, "login", "")
	schemas, err := NewSchemas(writeSchemas(b, map[string]string{"login.json": loginSchema}), []descriptor.Route{r})
	if err != nil {
		b.Fatal(err)
	}
	return r, schemas
}

// BenchmarkDecodeAttack is DecodeRequest on each attack body, without a
// schema and with the example game's login schema.
func BenchmarkDecodeAttack(b *testing.B) {
	r, schemas := loginSchemas(b)
	for _, name := range []string{"numbers", "string", "keys"} {
		body := []byte(attackBodies[name])
		if len(body) > 8184 {
			b.Fatalf("%s: %d bytes", name, len(body))
		}
		for _, withSchema := range []bool{false, true} {
			label := name
			var s *Schemas
			if withSchema {
				label += "/schema"
				s = schemas
			}
			b.Run(label, func(b *testing.B) {
				L := newState(b)
				b.SetBytes(int64(len(body)))
				b.ReportAllocs()
				for b.Loop() {
					DecodeRequest(L, &r, JSONName, body, false, s)
				}
			})
		}
	}
}

// BenchmarkValidateParts splits a schema's cost: encoding/json's parse of
// the body, and the validator on the parsed value.
func BenchmarkValidateParts(b *testing.B) {
	_, schemas := loginSchemas(b)
	for _, name := range []string{"numbers", "string", "keys"} {
		body := []byte(attackBodies[name])
		b.Run(name+"/parse", func(b *testing.B) {
			for b.Loop() {
				parseJSON(body)
			}
		})
		v, _ := parseJSON(body)
		b.Run(name+"/validate", func(b *testing.B) {
			for b.Loop() {
				schemas.validateValue(1001, v)
			}
		})
	}
}
