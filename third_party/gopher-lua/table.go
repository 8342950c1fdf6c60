package lua

import "slices"

const defaultArrayCap = 32
const defaultHashCap = 32

// minCompactKeys is the length below which a table's key list is never
// compacted (see compactKeys).
const minCompactKeys = 32

// maxExactInt is 2^53: every integer up to it is exact in an LNumber.
const maxExactInt = 1 << 53

// deadKey replaces, in LTable.keys, a key that moved to the array part. It
// is a value no script or Go caller can hold, so no lookup ever finds it.
var deadKey LValue = &LNilType{}

type lValueArraySorter struct {
	L      *LState
	Fn     *LFunction
	Values []LValue
}

func (lv lValueArraySorter) Len() int {
	return len(lv.Values)
}

func (lv lValueArraySorter) Swap(i, j int) {
	lv.Values[i], lv.Values[j] = lv.Values[j], lv.Values[i]
}

func (lv lValueArraySorter) Less(i, j int) bool {
	if lv.Fn != nil {
		lv.L.Push(lv.Fn)
		lv.L.Push(lv.Values[i])
		lv.L.Push(lv.Values[j])
		lv.L.Call(2, 1)
		return LVAsBool(lv.L.reg.Pop())
	}
	return lessThan(lv.L, lv.Values[i], lv.Values[j])
}

func newLTable(acap int, hcap int) *LTable {
	if acap < 0 {
		acap = 0
	}
	if hcap < 0 {
		hcap = 0
	}
	tb := &LTable{}
	tb.Metatable = LNil
	if acap != 0 {
		tb.array = make([]LValue, 0, acap)
	}
	switch {
	case hcap > smallStrKeys && hcap != defaultHashCap:
		tb.strdict = make(map[string]LValue, hcap)
	case hcap > 0 && hcap <= smallStrKeys:
		// Shield patch 4: a few string keys live in a slice. NewTable's
		// defaultHashCap says nothing about the keys to come: its slice
		// is made at the first string key.
		tb.strs = make([]strEntry, 0, hcap)
	}
	return tb
}

// Shield patch 1 (see PATCHES.md): the array part holds only the integer
// keys that keep it dense. Upstream grew it to any key below MaxArrayIndex
// (2^26) in one step, so t[n] = v with a large n allocated up to a gigabyte
// inside one VM instruction, before any budget could stop it. Here a key k
// past the array part's end goes into it only when the array part stays
// at least half full, or the slots are already there:
//
//   - k == len(array)+1, an append;
//   - more than half of the slots 1..k would be used, counting the array
//     part's non-nil slots (arrayUsed) and k itself, so that growing never
//     allocates more than twice what the table holds;
//   - k <= cap(array), slots already allocated;
//   - k <= defaultArrayCap, the array part upstream gives every table at its
//     first integer key (so small tables behave exactly as upstream);
//
// and only when k is a new key: an existing hash key is updated where it
// is, so that a traversal assigning to the key it is at (which Lua allows)
// does not lose its place. Every other positive integer key goes to the
// hash part, as do 0, negative and non-integer numbers (as in Lua 5.1; an
// integer-valued float is the same LNumber as the integer). When the array
// part grows it takes out of the hash part the keys it now covers, then the
// run len+1, len+2, ... that follows it, so a table filled from the end
// (t[n], ..., t[1]) still ends up as an array.

// Len returns length of this LTable without using __len: a border (t[n]
// is not nil and t[n+1] is, or 0 when t[1] is nil). It is the length of
// the array part, whose last slot is never nil; only when that part is full
// up to MaxArrayIndex does the border go on into the hash part.
func (tb *LTable) Len() int {
	n := len(tb.array)
	if n+1 < MaxArrayIndex || tb.dict == nil {
		return n
	}
	return tb.unboundSearch(n)
}

// unboundSearch finds a border above n, t[n] not nil, with keys past n in
// the hash part: by doubling, then bisecting, as Lua 5.1's unbound_search.
// Integers are exact up to 2^53, so the search stops there.
func (tb *LTable) unboundSearch(n int) int {
	i, j := n, n+1
	for tb.RawGetInt(j) != LNil {
		if j >= maxExactInt {
			return j
		}
		i = j
		j *= 2
		if j > maxExactInt {
			j = maxExactInt
		}
	}
	for j-i > 1 {
		m := i + (j-i)/2
		if tb.RawGetInt(m) == LNil {
			j = m
		} else {
			i = m
		}
	}
	return i
}

// Append appends a given LValue to this LTable: t[#t+1] = value.
func (tb *LTable) Append(value LValue) {
	if value == LNil {
		return
	}
	tb.RawSetInt(tb.Len()+1, value)
}

// Insert inserts a given LValue at position `i` in this table, as Lua 5.1's
// table.insert(t, i, value): for 1 <= i <= #t+1 the elements i..#t move up
// one; past the border it is t[i] = value, which neither moves nor
// allocates anything for the positions between (upstream grew the array
// part to i: table.insert(t, 2^24, v) allocated 1.5 GB). An i below 1 is
// t[i] = value too, as upstream (Lua 5.1 would move every element from the
// border down to i, a loop as long as -i).
func (tb *LTable) Insert(i int, value LValue) {
	n := tb.Len()
	if i < 1 || i > n {
		tb.RawSetInt(i, value)
		return
	}
	if n != len(tb.array) || n+1 >= MaxArrayIndex {
		// The border is past MaxArrayIndex, in the hash part: move
		// element by element, as Lua does.
		for k := n; k >= i; k-- {
			tb.RawSetInt(k+1, tb.RawGetInt(k))
		}
		tb.RawSetInt(i, value)
		return
	}
	tb.growTo(n + 1)
	copy(tb.array[i:], tb.array[i-1:n])
	tb.array[i-1] = value
	if value != LNil {
		tb.arrayUsed++
	}
	tb.pullFromHash()
}

// MaxN returns the largest positive integer key (up to 2^53), or 0 when
// there is none. Unlike upstream it looks in the hash part too, where the
// sparse integer keys are.
func (tb *LTable) MaxN() int {
	max := len(tb.array)
	if tb.hashInts == 0 {
		return max
	}
	for key := range tb.dict {
		if isPositiveInt(key) {
			if k := int(key.(LNumber)); k > max {
				max = k
			}
		}
	}
	return max
}

// maxNumberKey is Lua 5.1's table.maxn: the largest positive number key,
// integer or not, or 0 when there is none.
func (tb *LTable) maxNumberKey() LNumber {
	max := LNumber(len(tb.array))
	for key := range tb.dict {
		if n, ok := key.(LNumber); ok && n > max {
			max = n
		}
	}
	return max
}

// Remove removes from this table the element at a given position: for
// 1 <= pos <= #t the elements pos+1..#t move down one; pos < 1 removes
// the last element (#t), as upstream; pos > #t removes nothing.
func (tb *LTable) Remove(pos int) LValue {
	n := tb.Len()
	switch {
	case n == 0 || pos > n:
		return LNil
	case pos < 1:
		pos = n
	}
	if n != len(tb.array) {
		// The border is past MaxArrayIndex, in the hash part.
		old := tb.RawGetInt(pos)
		for k := pos; k < n; k++ {
			tb.RawSetInt(k, tb.RawGetInt(k+1))
		}
		tb.RawSetInt(n, LNil)
		return old
	}
	old := tb.array[pos-1]
	if old != LNil {
		tb.arrayUsed--
	}
	copy(tb.array[pos-1:], tb.array[pos:])
	tb.array[n-1] = LNil
	tb.array = tb.array[:n-1]
	tb.trimArray()
	return old
}

// RawSet sets a given LValue to a given index without the __newindex metamethod.
// It is recommended to use `RawSetString` or `RawSetInt` for performance
// if you already know the given LValue is a string or number.
func (tb *LTable) RawSet(key LValue, value LValue) {
	switch v := key.(type) {
	case LNumber:
		if isArrayKey(v) {
			tb.RawSetInt(int(v), value)
			return
		}
	case LString:
		tb.setStr(string(v), key, value)
		return
	}
	tb.setHash(key, value)
}

// RawSetInt sets a given LValue at a position `key` without the __newindex metamethod.
func (tb *LTable) RawSetInt(key int, value LValue) {
	n := len(tb.array)
	if key >= 1 && key <= n {
		tb.countUse(tb.array[key-1], value)
		tb.array[key-1] = value
		if value == LNil && key == n {
			tb.trimArray()
		}
		return
	}
	if key < 1 || key >= MaxArrayIndex || !tb.arrayTakes(key, value) {
		tb.setHash(LNumber(key), value)
		return
	}
	tb.growTo(key)
	tb.array[key-1] = value
	tb.arrayUsed++
	tb.pullFromHash()
}

// countUse keeps arrayUsed as an array slot goes from old to value.
func (tb *LTable) countUse(old, value LValue) {
	switch {
	case old == LNil && value != LNil:
		tb.arrayUsed++
	case old != LNil && value == LNil:
		tb.arrayUsed--
	}
}

// arrayTakes reports whether key, past the array part's end, goes into it
// (the rule above the Len method). A nil goes nowhere: setHash deletes the
// key from the hash part, where it can only be.
func (tb *LTable) arrayTakes(key int, value LValue) bool {
	if value == LNil {
		return false
	}
	if key != len(tb.array)+1 && key > cap(tb.array) && key > defaultArrayCap && 2*(tb.arrayUsed+1) <= key {
		return false
	}
	if tb.hashInts > 0 && tb.dict != nil {
		if _, ok := tb.dict[LNumber(key)]; ok {
			return false // an existing key stays where it is
		}
	}
	return true
}

// growTo extends the array part to n > len(array) slots, the new ones nil,
// and moves into it the keys it now covers from the hash part. The caller
// then fills slot n, so that the last slot is not nil. Growing past the
// capacity appends (amortized doubling), never less than defaultArrayCap.
func (tb *LTable) growTo(n int) {
	old := len(tb.array)
	if n > cap(tb.array) {
		want := n
		if want < defaultArrayCap {
			want = defaultArrayCap
		}
		tb.array = slices.Grow(tb.array, want-old)
	}
	tb.array = tb.array[:n]
	for i := old; i < n; i++ {
		tb.array[i] = LNil
	}
	if tb.hashInts > 0 {
		tb.migrate(old+1, n)
	}
}

// migrate moves the hash part's keys lo..hi, which the array part now
// covers, into it: a live value to its slot, and every listing of the key
// (live or deleted) out of keys and k2i, so that Next never meets a key in
// both parts. It probes each key or scans the key list, whichever is
// shorter, so its cost is bounded by what the table already holds.
func (tb *LTable) migrate(lo, hi int) {
	if hi-lo < len(tb.keys) {
		for k := lo; k <= hi && tb.hashInts > 0; k++ {
			key := LNumber(k)
			if idx, ok := tb.k2i[key]; ok {
				tb.moveToArray(idx, key)
			}
		}
	} else {
		for idx, key := range tb.keys {
			if n, ok := key.(LNumber); ok && n >= LNumber(lo) && n <= LNumber(hi) && isInteger(n) {
				tb.moveToArray(idx, n)
			}
		}
	}
	if tb.dict != nil && len(tb.dict) == 0 {
		tb.dict = nil // let a map emptied by the move be collected
	}
}

// moveToArray moves key, listed at keys[idx], to its array slot.
func (tb *LTable) moveToArray(idx int, key LNumber) {
	if v, ok := tb.dict[key]; ok {
		tb.array[int(key)-1] = v
		tb.arrayUsed++
		delete(tb.dict, key)
	}
	delete(tb.k2i, key)
	tb.keys[idx] = deadKey
	tb.hashInts--
}

// pullFromHash moves the run of keys len+1, len+2, ... from the hash part
// into the array part after it grew, so that len(array) stays a border.
func (tb *LTable) pullFromHash() {
	for tb.hashInts > 0 && tb.dict != nil {
		k := len(tb.array) + 1
		if k >= MaxArrayIndex {
			return
		}
		if _, ok := tb.dict[LNumber(k)]; !ok {
			return
		}
		tb.growTo(k) // migrate fills slot k
	}
}

// reserveArray makes room for the keys 1..n in the array part, for a table
// constructor (OP_SETLIST): its values are already on the stack, so the
// room is bounded by them, and a key within the capacity goes to the array
// part even after nils (Lua 5.1 sizes the array part the same way).
func (tb *LTable) reserveArray(n int) {
	if n > cap(tb.array) && n < MaxArrayIndex {
		tb.array = slices.Grow(tb.array, n-len(tb.array))
	}
}

// trimArray shrinks the array part past its trailing nils, so that its
// last slot is not nil. The capacity stays, and so do the nil slots.
func (tb *LTable) trimArray() {
	n := len(tb.array)
	for n > 0 && tb.array[n-1] == LNil {
		n--
	}
	tb.array = tb.array[:n]
}

// RawSetString sets a given LValue to a given string index without the __newindex metamethod.
// A table's first smallStrKeys string keys stay in its small part (Shield
// patch 4); a key already in strdict is listed already, so only a new one
// is boxed and listed.
func (tb *LTable) RawSetString(key string, value LValue) { tb.setStr(key, nil, value) }

// setStr sets a string key; lkey is the key boxed when the caller has it
// (RawSet, RawSetH), which the small part keeps for Next.
func (tb *LTable) setStr(key string, lkey LValue, value LValue) {
	if tb.strdict == nil && tb.setSmall(key, lkey, value) {
		return
	}
	if value == LNil {
		delete(tb.strdict, key) // listed in keys until compactKeys
		return
	}
	if _, ok := tb.strdict[key]; ok {
		tb.strdict[key] = value
		return
	}
	tb.strdict[key] = value
	if lkey == nil {
		lkey = LString(key)
	}
	tb.listKey(lkey)
}

// RawSetH sets a given LValue to a given index without the __newindex metamethod.
// An integer key of the array part's range goes through RawSetInt (Shield
// patch), so that no key is ever in both parts.
func (tb *LTable) RawSetH(key LValue, value LValue) {
	switch k := key.(type) {
	case LString:
		tb.setStr(string(k), key, value)
		return
	case LNumber:
		if isArrayKey(k) {
			tb.RawSetInt(int(k), value)
			return
		}
	}
	tb.setHash(key, value)
}

// setHash sets a non-string key of the hash part.
func (tb *LTable) setHash(key LValue, value LValue) {
	if n, ok := key.(LNumber); ok && n != n {
		// NaN: LState.RawSet raises "table index is NaN" before this;
		// from Go, such a key could never be read back.
		return
	}
	if value == LNil {
		if tb.dict != nil {
			delete(tb.dict, key) // listed in keys until compactKeys
		}
		return
	}
	if tb.dict == nil {
		tb.dict = make(map[LValue]LValue, len(tb.strdict))
	}
	tb.dict[key] = value
	tb.listKey(key)
}

// listKey adds a key just stored in the hash part to the key list Next
// walks, if it is not listed yet.
func (tb *LTable) listKey(key LValue) {
	if tb.k2i == nil {
		tb.k2i = make(map[LValue]int)
	} else if _, ok := tb.k2i[key]; ok {
		return
	}
	if len(tb.keys) >= minCompactKeys && len(tb.keys) >= 2*(len(tb.dict)+len(tb.strdict)) {
		tb.compactKeys()
	}
	tb.k2i[key] = len(tb.keys)
	tb.keys = append(tb.keys, key)
	if isPositiveInt(key) {
		tb.hashInts++
	}
}

// compactKeys drops deleted and moved keys from the key list, once they are
// at least half of it (Shield patch 3). Upstream never did, so a table whose
// keys come and go (t[id] = v ... t[id] = nil with ever new ids) grew its
// key list and index without bound. It runs only when a new key is added,
// which Lua forbids during a traversal, so a traversal's deleted current
// key keeps its place for Next.
func (tb *LTable) compactKeys() {
	live := make([]LValue, 0, len(tb.dict)+len(tb.strdict)+1)
	k2i := make(map[LValue]int, cap(live))
	ints := 0
	for _, key := range tb.keys {
		if key == deadKey || tb.hashGet(key) == LNil {
			continue
		}
		k2i[key] = len(live)
		live = append(live, key)
		if isPositiveInt(key) {
			ints++
		}
	}
	tb.keys, tb.k2i, tb.hashInts = live, k2i, ints
}

// RawGet returns an LValue associated with a given key without __index metamethod.
func (tb *LTable) RawGet(key LValue) LValue {
	switch v := key.(type) {
	case LNumber:
		if isArrayKey(v) {
			return tb.RawGetInt(int(v))
		}
	case LString:
		return tb.getStr(string(v))
	}
	if tb.dict == nil {
		return LNil
	}
	if v, ok := tb.dict[key]; ok {
		return v
	}
	return LNil
}

// RawGetInt returns an LValue at position `key` without __index metamethod.
// Unlike upstream it finds a key kept in the hash part too.
func (tb *LTable) RawGetInt(key int) LValue {
	if key >= 1 && key <= len(tb.array) {
		return tb.array[key-1]
	}
	if tb.dict == nil || key >= 1 && key <= maxExactInt && tb.hashInts == 0 {
		return LNil
	}
	if v, ok := tb.dict[LNumber(key)]; ok {
		return v
	}
	return LNil
}

// RawGetH returns an LValue associated with a given key without __index metamethod.
// Like RawSetH, it looks an integer key of the array part's range up with
// RawGetInt (Shield patch).
func (tb *LTable) RawGetH(key LValue) LValue {
	if n, ok := key.(LNumber); ok && isArrayKey(n) {
		return tb.RawGetInt(int(n))
	}
	return tb.hashGet(key)
}

// hashGet looks key up in the hash part only.
func (tb *LTable) hashGet(key LValue) LValue {
	if s, ok := key.(LString); ok {
		return tb.getStr(string(s))
	}
	if tb.dict == nil {
		return LNil
	}
	if v, ok := tb.dict[key]; ok {
		return v
	}
	return LNil
}

// RawGetString returns an LValue associated with a given key without __index metamethod.
func (tb *LTable) RawGetString(key string) LValue { return tb.getStr(key) }

// ForEach iterates over this table of elements, yielding each in turn to a given function.
func (tb *LTable) ForEach(cb func(LValue, LValue)) {
	if tb.array != nil {
		for i, v := range tb.array {
			if v != LNil {
				cb(LNumber(i+1), v)
			}
		}
	}
	for i := range tb.strs {
		if e := &tb.strs[i]; e.value != LNil {
			cb(e.boxed(), e.value)
		}
	}
	if tb.strdict != nil {
		for k, v := range tb.strdict {
			if v != LNil {
				cb(LString(k), v)
			}
		}
	}
	if tb.dict != nil {
		for k, v := range tb.dict {
			if v != LNil {
				cb(k, v)
			}
		}
	}
}

// This function is equivalent to lua_next ( http://www.lua.org/manual/5.1/manual.html#lua_next ).
// It walks the array part in order, then the small string part (Shield
// patch 4) and the hash part, each in insertion order.
// A key it does not know ends the traversal (Lua raises "invalid key to
// 'next'").
func (tb *LTable) Next(key LValue) (LValue, LValue) {
	from := 0 // the array slot to go on from
	if key != LNil {
		if s, ok := key.(LString); ok && tb.strdict == nil {
			return tb.nextSmallAfter(string(s))
		}
		k, inArray := tb.arrayResume(key)
		if !inArray {
			idx, ok := tb.k2i[key]
			if !ok {
				return LNil, LNil
			}
			return tb.nextHash(idx + 1)
		}
		from = k
	}
	for ; from < len(tb.array); from++ {
		if v := tb.array[from]; v != LNil {
			return LNumber(from + 1), v
		}
	}
	return tb.nextSmall(0)
}

// arrayResume reports whether a traversal at key is in the array part, and
// if so the slot after key's. That is key's slot, or one the array part no
// longer has because a nil written at its end shrank it (the traversal then
// goes on with the hash part); a key listed in the hash part is not in the
// array part.
func (tb *LTable) arrayResume(key LValue) (int, bool) {
	n, ok := key.(LNumber)
	if !ok || !isArrayKey(n) {
		return 0, false
	}
	k := int(n)
	if k <= len(tb.array) {
		return k, true
	}
	if _, listed := tb.k2i[key]; listed {
		return 0, false
	}
	return k, true
}

// nextHash returns the first live key of the hash part listed at or after
// index i, and its value.
func (tb *LTable) nextHash(i int) (LValue, LValue) {
	for ; i < len(tb.keys); i++ {
		key := tb.keys[i]
		if key == deadKey {
			continue
		}
		if v := tb.hashGet(key); v != LNil {
			return key, v
		}
	}
	return LNil, LNil
}

// isPositiveInt reports whether key is an integer number in 1..2^53.
func isPositiveInt(key LValue) bool {
	n, ok := key.(LNumber)
	return ok && n >= 1 && n <= maxExactInt && isInteger(n)
}
