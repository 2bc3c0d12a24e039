package tensor

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"
)

// FuzzSafetensorsHeader feeds whole files to the header validator. A file
// must either be rejected with an error or describe tensors that tile the
// data section exactly, each as large as its shape says.
func FuzzSafetensorsHeader(f *testing.F) {
	f.Add(rawFile(`{"__metadata__":{"format":"pt"},"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`, 8))
	f.Add(rawFile(`{}`, 0))
	f.Add(rawFile(`{"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},"b":{"dtype":"U8","shape":[4],"data_offsets":[2,6]}}`, 6))
	f.Add(rawFile(`{"a":{"dtype":"U8","shape":[8],"data_offsets":[0,8]}}`, 2))
	f.Add(rawFile(`{"a":{"dtype":"U8","shape":[-1],"data_offsets":[0,1]}}`, 1))
	f.Add(rawFile(`{"a":{"dtype":"F64","shape":[4611686018427387904,4611686018427387904],"data_offsets":[0,0]}}`, 0))
	f.Add(rawFile(`{"a":{"dtype":"U8","shape":[0],"data_offsets":[0,0]},"a":{}}`, 0))
	f.Add(rawFile("{\"\xff\xfe\":{}}", 0))
	f.Add(rawFile(`{"a":`+strings.Repeat("[", 10000)+strings.Repeat("]", 10000)+`}`, 0))
	f.Add(rawFile(`{"__metadata__":`+strings.Repeat(`{"a":`, 5000)+`""`+strings.Repeat("}", 5000)+`}`, 0))
	f.Add(rawFile(`{"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}}`, 2)[:20]) // truncated
	huge := make([]byte, 8)
	binary.LittleEndian.PutUint64(huge, ^uint64(0))
	f.Add(huge)
	f.Add(rawFile(`{"\u00e9\ud83d\ude00":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"__metadata__":{"k\n":"v\"\\"}}`, 1))
	f.Add(rawFile(`{"a":{"dtype":"U8","shape":[1e0],"data_offsets":[0,1]}}`, 1))
	f.Add(rawFile(`{"a":{"dtype":"U8","shape":[-0],"data_offsets":[0,0]}} `+"\t\r\n", 0))
	f.Fuzz(func(t *testing.T, file []byte) {
		l, err := readLayout(bytes.NewReader(file), int64(len(file)))
		if err != nil {
			if _, ok := err.(*FormatError); !ok && !strings.Contains(err.Error(), "reading") {
				t.Fatalf("unexpected error type %T: %v", err, err)
			}
			return
		}
		dataSize := int64(len(file)) - l.dataStart()
		var end int64
		for _, ti := range l.tensors {
			want, ok := byteSize(ti.Shape, ti.DType.Size())
			if ti.Offset != end || !ok || want != ti.Size {
				t.Fatalf("accepted tensor %+v does not follow %d / size %d", ti, end, want)
			}
			end += ti.Size
		}
		if end != dataSize {
			t.Fatalf("tensors cover %d of %d data bytes", end, dataSize)
		}
		checkAgainstEncodingJSON(t, file[8:l.dataStart()], l)
	})
}

// checkAgainstEncodingJSON decodes an accepted header with encoding/json,
// an independent parser, and requires the same tensors and metadata.
func checkAgainstEncodingJSON(t *testing.T, hdr []byte, l *layout) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(hdr, &raw); err != nil {
		t.Fatalf("accepted a header encoding/json rejects: %v", err)
	}
	if md, ok := raw["__metadata__"]; ok {
		var want map[string]string
		if err := json.Unmarshal(md, &want); err != nil || !maps.Equal(want, l.metadata) {
			t.Fatalf("metadata %v, encoding/json says %v (%v)", l.metadata, want, err)
		}
		delete(raw, "__metadata__")
	}
	if len(raw) != len(l.tensors) {
		t.Fatalf("%d tensors, encoding/json sees %d", len(l.tensors), len(raw))
	}
	for _, ti := range l.tensors {
		var e struct {
			DType   string  `json:"dtype"`
			Shape   []int   `json:"shape"`
			Offsets []int64 `json:"data_offsets"`
		}
		if err := json.Unmarshal(raw[ti.Name], &e); err != nil {
			t.Fatalf("tensor %q: encoding/json: %v", ti.Name, err)
		}
		if e.DType != string(ti.DType) || !slices.Equal(e.Shape, ti.Shape) || len(e.Offsets) != 2 ||
			e.Offsets[0] != ti.Offset || e.Offsets[1] != ti.Offset+ti.Size {
			t.Fatalf("tensor %q = %+v, encoding/json says %+v", ti.Name, ti, e)
		}
	}
}

func TestHeaderStringsMatchEncodingJSON(t *testing.T) {
	for _, lit := range []string{`"plain"`, `"tab\there"`, `"\u00e9t\u00E9"`, `"\ud83d\ude00 emoji"`, `"lone \ud800 half"`,
		`"lone low \udc00"`, `"\"quoted\" \\ \/ \b\f\n\r"`, `"ünïcödé raw"`, `"\ud800\u0041"`} {
		s := &hdrScanner{b: []byte(lit)}
		got, err := s.str()
		var want string
		if jerr := json.Unmarshal([]byte(lit), &want); jerr != nil || err != nil || got != want {
			t.Errorf("%s: scanner %q (%v), encoding/json %q (%v)", lit, got, err, want, jerr)
		}
	}
	for _, bad := range []string{`"unterminated`, `"bad \x escape"`, `"short \u12"`, "\"ctl \x01\"", `"end\`} {
		s := &hdrScanner{b: []byte(bad)}
		if _, err := s.str(); err == nil || err.(*FormatError).Rule != RuleHeaderJSON {
			t.Errorf("%s: err = %v, want a JSON syntax error", bad, err)
		}
	}
}
