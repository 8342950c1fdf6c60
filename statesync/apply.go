package statesync

import (
	"fmt"
	"strconv"
	"strings"
)

// Apply applies a version's ops, in path order as a frame holds them, to
// tree: all of them, or none and an error (section 8.2's "applying must
// reject a SET or REMOVE under a path that is not a table and a REMOVE of
// a missing path"), so that a client whose frame does not apply keeps the
// state of its version and asks for a sync. A SET of a table puts a new
// empty map at its path. Messages are *FrameError's: "state frame: op 3
// (SET /a/b): /a is not a table", "state frame: op 2 (REMOVE /x): no such
// path", ops numbered from 1 across a version's parts.
func Apply(tree map[string]any, ops []Op) error {
	if err := checkOps(ops, nil, 1); err != nil {
		return err
	}
	if err := canApply(tree, ops); err != nil {
		return err
	}
	for i := range ops {
		op := &ops[i]
		parent := tree
		for _, k := range op.Path[:len(op.Path)-1] {
			parent = parent[k].(map[string]any) // canApply saw a table here
		}
		last := op.Path[len(op.Path)-1]
		if op.Kind == Remove {
			delete(parent, last)
		} else {
			parent[last] = op.Value.Any()
		}
	}
	return nil
}

// What an earlier op of the same version left at its path.
const (
	leftTable = 1 // a SET of a new table
	leftOther = 2 // a SET of a scalar, or a REMOVE
)

// canApply is Apply's first pass: it changes nothing. An op's path is
// checked against the nearest of its ancestors that an earlier op of the
// version set or removed (path order puts those first): under a new table
// only what the version itself made exists. With no such ancestor the
// state as it is decides.
func canApply(tree map[string]any, ops []Op) error {
	var seen map[string]uint8
	for i := range ops {
		op := &ops[i]
		n := len(op.Path)
		near, left := -1, uint8(0)
		for d := n - 1; d >= 1 && len(seen) > 0; d-- {
			if l, ok := seen[pathKey(op.Path[:d])]; ok {
				near, left = d, l
				break
			}
		}
		switch {
		case near >= 0 && left != leftTable:
			return notTable(i, op, op.Path[:near])
		case near >= 0 && near < n-1:
			return notTable(i, op, op.Path[:near+1])
		case near >= 0 && op.Kind == Remove:
			return noSuchPath(i, op)
		case near < 0:
			node := tree
			for d := 0; d < n-1; d++ {
				next, ok := node[op.Path[d]].(map[string]any)
				if !ok {
					return notTable(i, op, op.Path[:d+1])
				}
				node = next
			}
			if _, ok := node[op.Path[n-1]]; !ok && op.Kind == Remove {
				return noSuchPath(i, op)
			}
		}
		if seen == nil {
			seen = map[string]uint8{}
		}
		if op.Kind == Set && op.Value.kind == KindTable {
			seen[pathKey(op.Path)] = leftTable
		} else {
			seen[pathKey(op.Path)] = leftOther
		}
	}
	return nil
}

// pathKey is a map key for a path: length-prefixed keys, so that no key
// can forge a boundary.
func pathKey(p Path) string {
	var b strings.Builder
	for _, k := range p {
		b.WriteString(strconv.Itoa(len(k)))
		b.WriteByte(':')
		b.WriteString(k)
	}
	return b.String()
}

func notTable(i int, op *Op, at Path) error {
	return &FrameError{msg: fmt.Sprintf("state frame: op %d (%v %s): %s is not a table", i+1, op.Kind, op.Path.Pointer(), at.Pointer())}
}

func noSuchPath(i int, op *Op) error {
	return &FrameError{msg: fmt.Sprintf("state frame: op %d (REMOVE %s): no such path", i+1, op.Path.Pointer())}
}
