package config

import "slices"

// BodyCodecKey is the key under which the listener's body codec is
// registered (package codec) and which its sessions' ClientIngress
// carries: "json" and "raw" are shared by every listener; a protobuf codec
// belongs to its listener's descriptor set, so its key is
// "protobuf/<listener>". The gateway only passes the key along: it never
// decodes a body.
func (l *Listener) BodyCodecKey() string {
	if l.Protocol.Body == "protobuf" {
		return "protobuf/" + l.Name
	}
	return l.Protocol.Body
}

// BodyCodecKeys returns the distinct codec keys of the listeners, sorted.
// A push may go to sessions of any listener, so the runtime encodes its
// body once per key in use, not once per target.
func (c *Config) BodyCodecKeys() []string {
	seen := map[string]bool{}
	var keys []string
	for i := range c.Network.Listeners {
		k := c.Network.Listeners[i].BodyCodecKey()
		if !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}
