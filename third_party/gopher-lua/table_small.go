package lua

// Shield patch 4 (see PATCHES.md): a table's string keys live in a small
// slice, searched in order, until it has more than smallStrKeys of them.
// Upstream kept every string key in a Go map (made with room for 32 keys
// by NewTable, about a kilobyte) and listed it in the hash part's key
// list with its own map index, so a table of a few fields, the most common
// table there is (a decoded JSON object, a record built by a script, the
// Go side's result tables), cost two maps, a slice and a boxed key per
// field. Searching eight short strings in order is about as fast as a map
// lookup (PATCHES.md has the figures); the slice keeps insertion order,
// which Next walks.
//
// The rules:
//   - strs holds the string keys while strdict is nil; a key deleted there
//     keeps its entry with the value LNil (a tombstone), so that Next can
//     go on from it, as a deleted key stays listed in keys;
//   - a new key finds room by dropping the tombstones first (only adding a
//     key does that, which Lua forbids during a traversal); past
//     smallStrKeys live keys every string key moves to strdict and the key
//     list, for good, and the table is upstream's from then on;
//   - Next walks the array part, then strs, then the key list.

// smallStrKeys is the most string keys a table holds in its small part.
const smallStrKeys = 8

// strEntry is one string key of the small part. lkey is the key as an
// LValue: the caller's when it set the key with one (RawSet, RawSetH),
// else made the first time Next or ForEach hand the key out, so that a
// table set and read by string never allocates for its keys and one walked
// again and again (json encoding) boxes each only once.
type strEntry struct {
	key   string
	lkey  LValue // key boxed, or nil until needed
	value LValue // LNil: deleted
}

func (e *strEntry) boxed() LValue {
	if e.lkey == nil {
		e.lkey = LString(e.key)
	}
	return e.lkey
}

// getStr looks up a string key.
func (tb *LTable) getStr(key string) LValue {
	if tb.strdict != nil {
		if v, ok := tb.strdict[key]; ok {
			return v
		}
		return LNil
	}
	for i := range tb.strs {
		if tb.strs[i].key == key {
			return tb.strs[i].value
		}
	}
	return LNil
}

// setSmall sets key in the small part and reports true, or reports false
// once the key does not fit there: the string keys have then moved to
// strdict (spill), where the caller sets it.
func (tb *LTable) setSmall(key string, lkey LValue, value LValue) bool {
	for i := range tb.strs {
		if e := &tb.strs[i]; e.key == key {
			e.value = value
			return true
		}
	}
	if value == LNil {
		return true // not there: nothing to delete
	}
	if len(tb.strs) == smallStrKeys {
		tb.dropTombstones()
	}
	if len(tb.strs) < smallStrKeys {
		if tb.strs == nil {
			tb.strs = make([]strEntry, 0, 4)
		}
		tb.strs = append(tb.strs, strEntry{key: key, lkey: lkey, value: value})
		return true
	}
	tb.spill()
	return false
}

// dropTombstones removes the deleted entries of the small part, keeping
// the order of the others.
func (tb *LTable) dropTombstones() {
	live := tb.strs[:0]
	for _, e := range tb.strs {
		if e.value != LNil {
			live = append(live, e)
		}
	}
	clear(tb.strs[len(live):])
	tb.strs = live
}

// spill moves the small part's keys, all live (setSmall dropped the
// tombstones), to strdict and the key list, in their order.
func (tb *LTable) spill() {
	tb.strdict = make(map[string]LValue, 2*smallStrKeys)
	for i := range tb.strs {
		e := &tb.strs[i]
		tb.strdict[e.key] = e.value
		tb.listKey(e.boxed())
	}
	tb.strs = nil
}

// nextSmall returns the first live key of the small part at or after
// index i, and its value; past the small part, the hash part's first.
func (tb *LTable) nextSmall(i int) (LValue, LValue) {
	for ; i < len(tb.strs); i++ {
		if e := &tb.strs[i]; e.value != LNil {
			return e.boxed(), e.value
		}
	}
	return tb.nextHash(0)
}

// nextSmallAfter is Next from a string key while the string keys are in the
// small part; a key it does not hold ends the traversal.
func (tb *LTable) nextSmallAfter(key string) (LValue, LValue) {
	for i := range tb.strs {
		if tb.strs[i].key == key {
			return tb.nextSmall(i + 1)
		}
	}
	return LNil, LNil
}
