package tensor

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"math/bits"
	"sort"
	"strconv"
	"unicode/utf8"
)

// MaxHeaderSize bounds the JSON header of a safetensors file, as the
// reference implementation does, so a hostile length cannot make us allocate.
const MaxHeaderSize = 100 << 20

// TensorInfo describes one tensor of a safetensors file.
type TensorInfo struct {
	Name   string
	DType  DType
	Shape  []int
	Offset int64 // from the start of the data section
	Size   int64 // bytes
}

// layout is a validated safetensors header.
type layout struct {
	headerLen int64 // bytes of JSON after the 8-byte length
	metadata  map[string]string
	tensors   []TensorInfo // sorted by Offset
}

// dataStart is where the data section begins in the file.
func (l *layout) dataStart() int64 { return 8 + l.headerLen }

// readLayout reads and validates the header of a safetensors file of the
// given size. Nothing is allocated in proportion to a claimed length before
// that length has been checked against the limit and the file size.
func readLayout(r io.ReaderAt, fileSize int64) (*layout, error) {
	var prefix [8]byte
	if fileSize < 8 {
		return nil, formatErr(RuleHeaderLength, "file is %d bytes, shorter than the 8-byte header length", fileSize)
	}
	if _, err := r.ReadAt(prefix[:], 0); err != nil {
		return nil, fmt.Errorf("reading header length: %w", err)
	}
	n := binary.LittleEndian.Uint64(prefix[:])
	if n > MaxHeaderSize {
		return nil, formatErr(RuleHeaderLength, "header length %d exceeds the %d-byte limit", n, MaxHeaderSize)
	}
	if int64(n) > fileSize-8 {
		return nil, formatErr(RuleHeaderLength, "header length %d runs past the end of the %d-byte file", n, fileSize)
	}
	hdr := make([]byte, n)
	if _, err := r.ReadAt(hdr, 8); err != nil {
		return nil, fmt.Errorf("reading header: %w", err)
	}
	l, err := parseHeader(hdr, fileSize-8-int64(n))
	if err != nil {
		return nil, err
	}
	l.headerLen = int64(n)
	return l, nil
}

// parseHeader validates the JSON header against a data section of dataSize
// bytes. It scans the JSON itself (st_json.go) because encoding/json would
// silently keep the last of two duplicate keys and its token API is slow;
// following the fixed schema also bounds nesting: nothing deeper than a
// tensor entry's arrays is ever entered.
func parseHeader(hdr []byte, dataSize int64) (*layout, error) {
	if !utf8.Valid(hdr) {
		return nil, formatErr(RuleHeaderUTF8, "header is not valid UTF-8")
	}
	if len(hdr) == 0 || hdr[0] != '{' {
		return nil, formatErr(RuleHeaderJSON, "header must start with '{'")
	}
	s := &hdrScanner{b: hdr}
	if err := s.expect('{', literal("the header"), RuleHeaderJSON); err != nil {
		return nil, err
	}
	l := &layout{metadata: map[string]string{}}
	err := s.members(literal("the header"), func(key string) error {
		if key == "__metadata__" {
			return parseMetadata(s, l.metadata)
		}
		t, err := parseEntry(s, key)
		if err != nil {
			return err
		}
		l.tensors = append(l.tensors, t)
		return nil
	})
	if err != nil {
		return nil, err
	}
	// peek also answers 0 for a NUL byte: only the end of the header ends it.
	if s.peek(); s.i < len(s.b) {
		return nil, formatErr(RuleHeaderJSON, "unexpected %s after the header object", s.describeNext())
	}
	if err := checkOffsets(l.tensors, dataSize); err != nil {
		return nil, err
	}
	return l, nil
}

func checkOffsets(ts []TensorInfo, dataSize int64) error {
	for _, t := range ts {
		if t.Offset+t.Size > dataSize {
			return formatErr(RuleOffsetsInFile, "tensor %q ends at byte %d of a %d-byte data section", t.Name, t.Offset+t.Size, dataSize)
		}
	}
	sort.SliceStable(ts, func(i, j int) bool {
		if ts[i].Offset != ts[j].Offset {
			return ts[i].Offset < ts[j].Offset
		}
		return ts[i].Size < ts[j].Size
	})
	var end int64
	prev := ""
	for _, t := range ts {
		switch {
		case t.Offset < end:
			return formatErr(RuleOffsetsOrder, "tensor %q starts at %d, overlapping %q which ends at %d", t.Name, t.Offset, prev, end)
		case t.Offset > end && prev == "":
			return formatErr(RuleOffsetsOrder, "the first tensor %q starts at %d, leaving a gap after 0", t.Name, t.Offset)
		case t.Offset > end:
			return formatErr(RuleOffsetsOrder, "gap between %q ending at %d and %q starting at %d", prev, end, t.Name, t.Offset)
		}
		end, prev = t.Offset+t.Size, t.Name
	}
	if end != dataSize {
		return formatErr(RuleFileSize, "tensors cover %d bytes but the data section has %d (trailing bytes)", end, dataSize)
	}
	return nil
}

func parseMetadata(s *hdrScanner, into map[string]string) error {
	if err := s.expect('{', literal("__metadata__"), RuleMetadata); err != nil {
		return err
	}
	return s.members(literal("__metadata__"), func(key string) error {
		if s.peek() != '"' {
			return s.kindErr(RuleMetadata, "__metadata__[%q] is %s, not a string", key, s.describeNext())
		}
		v, err := s.str()
		into[key] = v
		return err
	})
}

// lazyString formats a message fragment only when it is printed.
type lazyString func() string

func (l lazyString) String() string { return l() }

func parseEntry(s *hdrScanner, name string) (TensorInfo, error) {
	t := TensorInfo{Name: name}
	// Quoting the name is the costliest step of a valid entry, so it is
	// done only when there is an error to report.
	where := lazyString(func() string { return fmt.Sprintf("tensor %q", name) })
	if err := s.expect('{', where, RuleEntry); err != nil {
		return t, err
	}
	seen := map[string]bool{}
	var offsets []int64
	err := s.members(where, func(key string) error {
		seen[key] = true
		switch key {
		case "dtype":
			if s.peek() != '"' {
				return s.kindErr(RuleEntry, "%s: dtype is %s, not a string", where, s.describeNext())
			}
			d, err := s.str()
			if err != nil {
				return err
			}
			t.DType = DType(d)
			if t.DType.Size() == 0 {
				return formatErr(RuleDType, "%s: unknown dtype %q", where, d)
			}
		case "shape":
			dims, err := intArray(s, where, "shape", RuleShape)
			if err != nil {
				return err
			}
			t.Shape = make([]int, len(dims))
			for i, d := range dims {
				if d < 0 || int64(int(d)) != d {
					return formatErr(RuleShape, "%s: shape[%d] = %d is negative or too large", where, i, d)
				}
				t.Shape[i] = int(d)
			}
		case "data_offsets":
			var err error
			if offsets, err = intArray(s, where, "data_offsets", RuleEntry); err != nil {
				return err
			}
			if len(offsets) != 2 {
				return formatErr(RuleEntry, "%s: data_offsets has %d entries, want [begin, end]", where, len(offsets))
			}
		default:
			return formatErr(RuleEntry, "%s: unknown field %q (want dtype, shape, data_offsets)", where, key)
		}
		return nil
	})
	if err != nil {
		return t, err
	}
	for _, f := range []string{"dtype", "shape", "data_offsets"} {
		if !seen[f] {
			return t, formatErr(RuleEntry, "%s: missing %s", where, f)
		}
	}
	begin, end := offsets[0], offsets[1]
	if begin < 0 || end < begin {
		return t, formatErr(RuleOffsetsOrder, "%s: data_offsets [%d, %d] run backwards", where, begin, end)
	}
	want, ok := byteSize(t.Shape, t.DType.Size())
	if !ok {
		return t, formatErr(RuleSpan, "%s: shape %v × %d bytes overflows", where, t.Shape, t.DType.Size())
	}
	if want != end-begin {
		return t, formatErr(RuleSpan, "%s: shape %v of %s is %d bytes but data_offsets span %d", where, t.Shape, t.DType, want, end-begin)
	}
	t.Offset, t.Size = begin, end-begin
	return t, nil
}

// byteSize is product(shape) × elemSize, reporting false on int64 overflow.
func byteSize(shape []int, elemSize int) (int64, bool) {
	n := uint64(elemSize)
	zero := false
	overflow := false
	for _, d := range shape {
		if d == 0 {
			zero = true
		}
		hi, lo := bits.Mul64(n, uint64(d))
		if hi != 0 || lo > math.MaxInt64 {
			overflow = true
		}
		n = lo
	}
	if zero {
		return 0, true // a zero dimension makes the tensor empty whatever the rest says
	}
	return int64(n), !overflow
}

// intArray reads a JSON array of integers; wrong kinds break rule.
func intArray(s *hdrScanner, where fmt.Stringer, field, rule string) ([]int64, error) {
	if err := s.expect('[', lazyString(func() string { return where.String() + ": " + field }), rule); err != nil {
		return nil, err
	}
	var out []int64
	if s.peek() == ']' {
		s.i++
		return out, nil
	}
	for {
		if c := s.peek(); c != '-' && (c < '0' || c > '9') {
			return nil, s.kindErr(rule, "%s: %s[%d] is %s, not an integer", where, field, len(out), s.describeNext())
		}
		lit, isInt, err := s.number()
		if err != nil {
			return nil, err
		}
		v, perr := strconv.ParseInt(lit, 10, 64)
		if !isInt || perr != nil {
			return nil, formatErr(rule, "%s: %s[%d] = %s is not an integer that fits in 64 bits", where, field, len(out), lit)
		}
		out = append(out, v)
		switch s.peek() {
		case ',':
			s.i++
		case ']':
			s.i++
			return out, nil
		default:
			return nil, s.syntax("in %s: %s: expected ',' or ']', found %s", where, field, s.describeNext())
		}
	}
}
