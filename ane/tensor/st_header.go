package tensor

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
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
// bytes. It walks the JSON token by token because encoding/json would
// silently keep the last of two duplicate keys; the fixed schema also bounds
// nesting (anything deeper than a tensor entry's arrays is rejected).
func parseHeader(hdr []byte, dataSize int64) (*layout, error) {
	if !utf8.Valid(hdr) {
		return nil, formatErr(RuleHeaderUTF8, "header is not valid UTF-8")
	}
	if len(hdr) == 0 || hdr[0] != '{' {
		return nil, formatErr(RuleHeaderJSON, "header must start with '{'")
	}
	dec := json.NewDecoder(bytes.NewReader(hdr))
	dec.UseNumber()
	if err := expectDelim(dec, '{', "the header", RuleHeaderJSON); err != nil {
		return nil, err
	}
	l := &layout{metadata: map[string]string{}}
	seen := map[string]bool{}
	for dec.More() {
		key, err := objectKey(dec, seen, "the header")
		if err != nil {
			return nil, err
		}
		if key == "__metadata__" {
			if err := parseMetadata(dec, l.metadata); err != nil {
				return nil, err
			}
			continue
		}
		t, err := parseEntry(dec, key)
		if err != nil {
			return nil, err
		}
		l.tensors = append(l.tensors, t)
	}
	if err := expectDelim(dec, '}', "the header", RuleHeaderJSON); err != nil {
		return nil, err
	}
	if tok, err := dec.Token(); err != io.EOF {
		return nil, formatErr(RuleHeaderJSON, "unexpected %v after the header object", describe(tok, err))
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

func parseMetadata(dec *json.Decoder, into map[string]string) error {
	if err := expectDelim(dec, '{', "__metadata__", RuleMetadata); err != nil {
		return err
	}
	seen := map[string]bool{}
	for dec.More() {
		key, err := objectKey(dec, seen, "__metadata__")
		if err != nil {
			return err
		}
		tok, err := dec.Token()
		v, ok := tok.(string)
		if err != nil || !ok {
			return formatErr(RuleMetadata, "__metadata__[%q] is %s, not a string", key, describe(tok, err))
		}
		into[key] = v
	}
	return expectDelim(dec, '}', "__metadata__", RuleHeaderJSON)
}

func parseEntry(dec *json.Decoder, name string) (TensorInfo, error) {
	t := TensorInfo{Name: name}
	where := fmt.Sprintf("tensor %q", name)
	if err := expectDelim(dec, '{', where, RuleEntry); err != nil {
		return t, err
	}
	seen := map[string]bool{}
	var offsets []int64
	for dec.More() {
		key, err := objectKey(dec, seen, where)
		if err != nil {
			return t, err
		}
		switch key {
		case "dtype":
			tok, err := dec.Token()
			s, ok := tok.(string)
			if err != nil || !ok {
				return t, formatErr(RuleEntry, "%s: dtype is %s, not a string", where, describe(tok, err))
			}
			t.DType = DType(s)
			if t.DType.Size() == 0 {
				return t, formatErr(RuleDType, "%s: unknown dtype %q", where, s)
			}
		case "shape":
			dims, err := intArray(dec, where, "shape", RuleShape)
			if err != nil {
				return t, err
			}
			t.Shape = make([]int, len(dims))
			for i, d := range dims {
				if d < 0 || int64(int(d)) != d {
					return t, formatErr(RuleShape, "%s: shape[%d] = %d is negative or too large", where, i, d)
				}
				t.Shape[i] = int(d)
			}
		case "data_offsets":
			offsets, err = intArray(dec, where, "data_offsets", RuleEntry)
			if err != nil {
				return t, err
			}
			if len(offsets) != 2 {
				return t, formatErr(RuleEntry, "%s: data_offsets has %d entries, want [begin, end]", where, len(offsets))
			}
		default:
			return t, formatErr(RuleEntry, "%s: unknown field %q (want dtype, shape, data_offsets)", where, key)
		}
	}
	if err := expectDelim(dec, '}', where, RuleHeaderJSON); err != nil {
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

// intArray reads a JSON array of integers.
func intArray(dec *json.Decoder, where, field, rule string) ([]int64, error) {
	if err := expectDelim(dec, '[', where+": "+field, rule); err != nil {
		return nil, err
	}
	var out []int64
	for dec.More() {
		tok, err := dec.Token()
		num, ok := tok.(json.Number)
		if err != nil || !ok {
			return nil, formatErr(rule, "%s: %s[%d] is %s, not an integer", where, field, len(out), describe(tok, err))
		}
		v, perr := strconv.ParseInt(string(num), 10, 64)
		if perr != nil {
			return nil, formatErr(rule, "%s: %s[%d] = %s is not an integer that fits in 64 bits", where, field, len(out), num)
		}
		out = append(out, v)
	}
	if err := expectDelim(dec, ']', where+": "+field, RuleHeaderJSON); err != nil {
		return nil, err
	}
	return out, nil
}

// objectKey reads the next key of an object and rejects repeats.
func objectKey(dec *json.Decoder, seen map[string]bool, where string) (string, error) {
	tok, err := dec.Token()
	if err != nil {
		return "", formatErr(RuleHeaderJSON, "in %s: %v", where, err)
	}
	key, ok := tok.(string)
	if !ok {
		return "", formatErr(RuleHeaderJSON, "in %s: key is %s", where, describe(tok, nil))
	}
	if seen[key] {
		return "", formatErr(RuleDuplicateKey, "key %q appears twice in %s", key, where)
	}
	seen[key] = true
	return key, nil
}

// expectDelim reads the delimiter want. Malformed JSON breaks the JSON rule;
// a well-formed value of the wrong kind breaks wrongKind, the rule of the
// field being read.
func expectDelim(dec *json.Decoder, want json.Delim, where, wrongKind string) error {
	tok, err := dec.Token()
	if d, ok := tok.(json.Delim); err == nil && ok && d == want {
		return nil
	}
	rule := wrongKind
	if err != nil {
		rule = RuleHeaderJSON
	}
	return formatErr(rule, "%s: expected %q, found %s", where, want, describe(tok, err))
}

// describe names a JSON token (or the error reading it) for messages.
func describe(tok json.Token, err error) string {
	if err == io.EOF {
		return "end of header"
	}
	if err != nil {
		return "invalid JSON (" + err.Error() + ")"
	}
	switch v := tok.(type) {
	case json.Delim:
		return fmt.Sprintf("%q", string(v))
	case string:
		return fmt.Sprintf("string %q", v)
	case json.Number:
		return "number " + string(v)
	case bool:
		return fmt.Sprintf("boolean %v", v)
	case nil:
		return "null"
	}
	return fmt.Sprintf("%v", tok)
}
