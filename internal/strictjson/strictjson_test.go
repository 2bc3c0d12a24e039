package strictjson

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

type doc struct {
	A     int `json:"a"`
	Files []struct {
		SHA string `json:"sha256"`
	} `json:"files"`
}

func TestDecode(t *testing.T) {
	var d doc
	if err := Decode([]byte(` {"a": 1, "files": [{"sha256": "x"}]} `), &d, Options{DisallowUnknownFields: true}); err != nil {
		t.Fatal(err)
	}
	if d.A != 1 || len(d.Files) != 1 || d.Files[0].SHA != "x" {
		t.Fatalf("decoded %+v", d)
	}
}

func TestDuplicateKeys(t *testing.T) {
	for _, c := range []struct {
		in, path, msg string
	}{
		{`{"a": 1, "a": 2}`, "a", `duplicate key "a" in object (top level)`},
		{`{"files": [{"sha256": "x"}, {"sha256": "x", "sha256": "y"}]}`, "files[1].sha256", `duplicate key "sha256" in object .files[1]`},
		{`{"x": {"y": {"z": 1, "z": 1}}}`, "x.y.z", `in object .x.y`},
		{`[{"k": [1, {"k": 1, "k": 2}]}]`, "[0].k[1].k", `in object [0].k[1]`},
	} {
		err := CheckDuplicateKeys([]byte(c.in))
		var de *DuplicateKeyError
		if !errors.As(err, &de) {
			t.Errorf("%s: err = %v, want a duplicate key", c.in, err)
			continue
		}
		if de.Path() != c.path || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: path %q error %q, want %q and %q", c.in, de.Path(), err, c.path, c.msg)
		}
		var v any
		if err := Decode([]byte(c.in), &v, Options{}); !errors.As(err, &de) {
			t.Errorf("Decode %s: err = %v, want a duplicate key", c.in, err)
		}
	}
	// The same key in sibling objects is fine.
	if err := CheckDuplicateKeys([]byte(`{"a": {"k": 1}, "b": {"k": 1}, "c": [{"k": 1}, {"k": 2}]}`)); err != nil {
		t.Errorf("sibling keys: %v", err)
	}
}

func TestRefusals(t *testing.T) {
	var d doc
	if err := Decode([]byte(`{"a": 1} {}`), &d, Options{}); !errors.Is(err, ErrTrailingData) {
		t.Errorf("trailing object: %v", err)
	}
	if err := Decode([]byte(`{"a": 1} }`), &d, Options{}); !errors.Is(err, ErrTrailingData) {
		t.Errorf("trailing brace: %v", err)
	}
	if err := Decode([]byte(`{"b": 1}`), &d, Options{DisallowUnknownFields: true}); err == nil || !strings.Contains(err.Error(), `unknown field "b"`) {
		t.Errorf("unknown field: %v", err)
	}
	if err := Decode([]byte(`{"b": 1}`), &d, Options{}); err != nil {
		t.Errorf("unknown field allowed: %v", err)
	}
	var te *json.UnmarshalTypeError
	if err := Decode([]byte(`{"a": "x"}`), &d, Options{}); !errors.As(err, &te) {
		t.Errorf("type error not returned as *json.UnmarshalTypeError: %v", err)
	}
	var tl *TooLargeError
	if err := Decode([]byte(`{"a": 1}`), &d, Options{MaxSize: 4}); !errors.As(err, &tl) || tl.Max != 4 {
		t.Errorf("size bound: %v", err)
	}
}

// FuzzDecode: any bytes decode or are refused, never a panic; a document
// that decodes has no duplicate keys.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{`{"a": 1}`, `{"a": 1, "a": 2}`, `{"a": {"b": [1, {"c": 1, "c": 2}]}}`, `[]`, `{"a": 1} x`, `"\u00e9"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var v any
		if err := Decode(data, &v, Options{MaxSize: 1 << 16}); err == nil {
			if err := CheckDuplicateKeys(data); err != nil {
				t.Fatalf("decoded a document with a duplicate key: %v", err)
			}
		}
	})
}
