package wire

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"
	"unicode/utf8"
)

// Limits bound what a peer can make the other side read and decode.
type Limits struct {
	MaxFrame int // largest frame body accepted, in bytes
	MaxDepth int // deepest nesting of arrays and maps; the top-level map is depth 1
}

// DefaultLimits are the daemon's defaults (docs/PROTOCOL.md §2).
var DefaultLimits = Limits{MaxFrame: 1 << 20, MaxDepth: 32}

// maxStackDepth keeps Validate's container stack on the goroutine stack.
const maxStackDepth = 64

// ValidationError says why a frame body was refused before decoding.
type ValidationError struct {
	Offset int    // byte offset in the body where the rule was broken
	Rule   string // which rule, in words
}

func (e *ValidationError) Error() string {
	return fmt.Sprintf("malformed msgpack at byte %d: %s", e.Offset, e.Rule)
}

// Validate walks a frame body iteratively, without decoding, and checks
// that it is exactly one msgpack map with nesting at most lim.MaxDepth, and
// that every declared length or element count fits in the bytes left.
// msgpack/v5 has no working limits of its own (it preallocates what a header
// claims and recurses without bound), so every frame passes through here (or
// through ValidateRequest) before any Unmarshal. It allocates nothing.
func Validate(b []byte, lim Limits) error { return walk(b, lim, false) }

// ValidateRequest is Validate plus the rules a request's content must keep
// anywhere in the frame (docs/PROTOCOL.md §3): every map key is a string,
// no map holds a key twice (msgpack/v5 would keep the last one, so
// {op: models, op: config.get} would run config.get), and every string is
// valid UTF-8. Its memory is one offset per key of the maps open at once
// (at most twice the frame's length, in practice nothing).
func ValidateRequest(b []byte, lim Limits) error { return walk(b, lim, true) }

func walk(b []byte, lim Limits, strict bool) error {
	depthLimit := lim.MaxDepth
	if depthLimit <= 0 || depthLimit > maxStackDepth {
		depthLimit = maxStackDepth
	}
	if len(b) == 0 {
		return &ValidationError{0, "empty frame"}
	}
	if !isMapCode(b[0]) {
		return &ValidationError{0, "the frame is not a msgpack map"}
	}
	// pending[d] is the number of values still to read in the container
	// open at depth d; for a map, an even count left means a key is next.
	// keyStart[d] is where that map's keys begin in keys (strict only).
	var stack [maxStackDepth + 1]int
	var isMap [maxStackDepth + 1]bool
	var keyStart [maxStackDepth + 1]int
	var keyBuf [64]uint32
	keys := keyBuf[:0]
	pending := stack[:1]
	pending[0] = 1
	pos := 0
	for len(pending) > 0 {
		top := len(pending) - 1
		if pending[top] == 0 {
			if strict && isMap[top] {
				if err := uniqueKeys(b, keys[keyStart[top]:]); err != nil {
					return err
				}
				keys = keys[:keyStart[top]]
			}
			pending = pending[:top]
			continue
		}
		isKey := isMap[top] && pending[top]%2 == 0
		pending[top]--
		if pos >= len(b) {
			return &ValidationError{pos, "frame ends inside a value"}
		}
		c := b[pos]
		start := pos
		pos++
		skip, children, hdr, ok := header(c)
		if !ok {
			return &ValidationError{pos - 1, fmt.Sprintf("invalid type byte 0x%02x", c)}
		}
		if strict && isKey {
			if !isStrCode(c) {
				return &ValidationError{start, fmt.Sprintf("a map key is %s; maps must have string keys", describeRaw(b[start:]))}
			}
			keys = append(keys, uint32(start))
		}
		if hdr > len(b)-pos {
			return &ValidationError{pos, "frame ends inside a length"}
		}
		// Lengths and counts stored after the type byte.
		switch {
		case hdr > 0 && isStrBinExt(c):
			skip += readLen(b[pos : pos+hdr])
		case hdr > 0 && isContainer(c):
			n := readLen(b[pos : pos+hdr])
			if isMapCode(c) {
				n *= 2
			}
			children = n
		}
		pos += hdr
		if skip > len(b)-pos {
			return &ValidationError{pos, fmt.Sprintf("declared length %d exceeds the %d bytes left", skip, len(b)-pos)}
		}
		// Every element takes at least one byte, so a count larger than
		// what is left is a lie told to make the decoder preallocate.
		if children > len(b)-pos {
			return &ValidationError{pos, fmt.Sprintf("declared element count %d exceeds the %d bytes left", children, len(b)-pos)}
		}
		if strict && isStrCode(c) && !utf8.Valid(b[pos:pos+skip]) {
			return &ValidationError{start, "a string is not valid UTF-8"}
		}
		pos += skip
		if children > 0 {
			if len(pending) > depthLimit { // pending[0] is the frame itself, not a container
				return &ValidationError{pos, fmt.Sprintf("nesting deeper than %d", depthLimit)}
			}
			pending = append(pending, children)
			isMap[len(pending)-1] = isMapCode(c)
			keyStart[len(pending)-1] = len(keys)
		}
	}
	if pos != len(b) {
		return &ValidationError{pos, fmt.Sprintf("%d trailing bytes after the map", len(b)-pos)}
	}
	return nil
}

// uniqueKeys refuses a map whose keys (offsets of validated str values in
// b) hold one string twice. Small maps compare pairwise; larger ones sort
// their offsets by key, in place (the caller drops them next).
func uniqueKeys(b []byte, offs []uint32) error {
	key := func(off uint32) []byte { return strPayload(b[off:]) }
	dup := func(off uint32) error {
		return &ValidationError{int(off), fmt.Sprintf("the map has the key %q twice", key(off))}
	}
	if len(offs) <= 16 {
		for i := 1; i < len(offs); i++ {
			for j := range i {
				if bytes.Equal(key(offs[i]), key(offs[j])) {
					return dup(offs[i])
				}
			}
		}
		return nil
	}
	slices.SortFunc(offs, func(x, y uint32) int { return bytes.Compare(key(x), key(y)) })
	for i := 1; i < len(offs); i++ {
		if bytes.Equal(key(offs[i]), key(offs[i-1])) {
			return dup(max(offs[i], offs[i-1]))
		}
	}
	return nil
}

func isStrCode(c byte) bool { return (c >= 0xa0 && c <= 0xbf) || (c >= 0xd9 && c <= 0xdb) }

// strPayload is the bytes of the validated str value b starts with.
func strPayload(b []byte) []byte {
	_, _, hdr, _ := header(b[0])
	n := int(b[0] & 0x1f)
	if hdr > 0 {
		n = readLen(b[1 : 1+hdr])
	}
	return b[1+hdr : 1+hdr+n]
}

func isMapCode(c byte) bool { return c&0xf0 == 0x80 || c == 0xde || c == 0xdf }

func isContainer(c byte) bool { return c == 0xdc || c == 0xdd || c == 0xde || c == 0xdf }

func isStrBinExt(c byte) bool {
	return (c >= 0xc4 && c <= 0xc9) || (c >= 0xd9 && c <= 0xdb)
}

// header classifies a type byte: fixed payload bytes to skip, fixed child
// count, and the size of a length field that follows (0 if none).
func header(c byte) (skip, children, hdr int, ok bool) {
	switch {
	case c <= 0x7f, c >= 0xe0: // fixint
		return 0, 0, 0, true
	case c <= 0x8f: // fixmap
		return 0, 2 * int(c&0x0f), 0, true
	case c <= 0x9f: // fixarray
		return 0, int(c & 0x0f), 0, true
	case c <= 0xbf: // fixstr
		return int(c & 0x1f), 0, 0, true
	}
	switch c {
	case 0xc0, 0xc2, 0xc3: // nil, false, true
		return 0, 0, 0, true
	case 0xc4, 0xd9: // bin8, str8
		return 0, 0, 1, true
	case 0xc5, 0xda: // bin16, str16
		return 0, 0, 2, true
	case 0xc6, 0xdb: // bin32, str32
		return 0, 0, 4, true
	case 0xc7: // ext8: length, then type byte
		return 1, 0, 1, true
	case 0xc8:
		return 1, 0, 2, true
	case 0xc9:
		return 1, 0, 4, true
	case 0xca, 0xce, 0xd2: // float32, uint32, int32
		return 4, 0, 0, true
	case 0xcb, 0xcf, 0xd3: // float64, uint64, int64
		return 8, 0, 0, true
	case 0xcc, 0xd0:
		return 1, 0, 0, true
	case 0xcd, 0xd1:
		return 2, 0, 0, true
	case 0xd4, 0xd5, 0xd6, 0xd7, 0xd8: // fixext 1,2,4,8,16 plus the type byte
		return 1 + 1<<(c-0xd4), 0, 0, true
	case 0xdc, 0xde: // array16, map16
		return 0, 0, 2, true
	case 0xdd, 0xdf: // array32, map32
		return 0, 0, 4, true
	}
	return 0, 0, 0, false // 0xc1 is never used
}

func readLen(p []byte) int {
	switch len(p) {
	case 1:
		return int(p[0])
	case 2:
		return int(binary.BigEndian.Uint16(p))
	default:
		return int(binary.BigEndian.Uint32(p))
	}
}
