package cluster

import (
	"strconv"
	"strings"

	"github.com/shieldrpc/shield/egress"
	"github.com/shieldrpc/shield/service"
)

// The subjects of a cluster, all under cluster.prefix (SPEC §10):
//
//	<prefix>.svc.<service>.<instance>  one per service instance: frames, calls, sends, session messages, claims
//	<prefix>.gw.<node>                 one per gateway node: pushes, kicks, binds
//	<prefix>.reply.<node>.<id>         answers to what node sent with that id (one wildcard subscription)
//	<prefix>.presence                  heartbeats, probes, joins, leaves, verdicts
//	<prefix>.room.<node>.<kind>.<hex>  one per room (docs/rooms.md §11.1): what <prefix>.svc carries for an instance
//	<prefix>.rooms.<node>              one per node hosting a room kind: the creates placed there
//	<prefix>.match.<queue>             one per match queue: enqueues and cancels
//
// Service and node names are config names; a node name may hold '.', which
// would split a token, so names are escaped (token).
type subjects struct {
	prefix    string
	instances map[egress.ActorID]string // every instance's subject, made once: one per frame would allocate
}

func newSubjects(prefix string, actors map[string]int) subjects {
	s := subjects{prefix: prefix, instances: map[egress.ActorID]string{}}
	for name, n := range actors {
		for i := range n {
			a := egress.ActorID{Service: name, Instance: i}
			s.instances[a] = s.makeInstance(a)
		}
	}
	return s
}

func (s subjects) instance(a egress.ActorID) string {
	if subj, ok := s.instances[a]; ok {
		return subj
	}
	switch {
	case a.Service == service.QueueService:
		return s.prefix + ".match." + token(a.Room)
	case a.Room != "":
		return s.room(a.Room)
	}
	return s.makeInstance(a)
}

// room is a room's subject, <prefix>.room.<node>.<kind>.<hex>: its node
// serves all its rooms with one subscription (roomsOf).
func (s subjects) room(id string) string {
	kind, rest, _ := strings.Cut(id, "/")
	hex, node, _ := strings.Cut(rest, "@")
	return s.prefix + ".room." + token(node) + "." + token(kind) + "." + hex
}

func (s subjects) roomsOf(node string) string { return s.prefix + ".room." + token(node) + ".*.*" }

// creates is where shield.room.create's calls placed on node go.
func (s subjects) creates(node string) string { return s.prefix + ".rooms." + token(node) }

func (s subjects) makeInstance(a egress.ActorID) string {
	return s.prefix + ".svc." + token(a.Service) + "." + strconv.Itoa(a.Instance)
}

func (s subjects) gateway(node string) string { return s.prefix + ".gw." + token(node) }

func (s subjects) replies(node string) string { return s.prefix + ".reply." + token(node) + ".*" }

func (s subjects) reply(node string, id uint64) string {
	return s.prefix + ".reply." + token(node) + "." + strconv.FormatUint(id, 10)
}

func (s subjects) presence() string { return s.prefix + ".presence" }

// replyID is the id of a reply subject's last token.
func replyID(subject string) (uint64, bool) {
	i := strings.LastIndexByte(subject, '.')
	if i < 0 {
		return 0, false
	}
	id, err := strconv.ParseUint(subject[i+1:], 10, 64)
	return id, err == nil
}

// token makes a name one subject token: '.', '*', '>' and white space
// become '_' (node and actor names are config strings, free of none of
// them).
func token(name string) string {
	if !strings.ContainsAny(name, ".*> \t\r\n") {
		return name
	}
	return strings.Map(func(r rune) rune {
		switch r {
		case '.', '*', '>', ' ', '\t', '\r', '\n':
			return '_'
		}
		return r
	}, name)
}
