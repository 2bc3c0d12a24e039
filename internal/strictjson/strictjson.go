// Package strictjson decodes JSON documents that must mean one thing:
// duplicate object keys are refused, naming the key's path (encoding/json
// silently keeps the last one, so a crafted file could say two different
// things to two readers), trailing data is refused, and optionally unknown
// fields and documents over a size bound.
//
// It is the one strict decoder in forged: the bundle formats, the daemon's
// config file and the model/drafter config.json all go through it.
package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// ErrTrailingData reports data after the JSON document.
var ErrTrailingData = errors.New("trailing data after the JSON document")

// Options are what Decode refuses beyond duplicate keys and trailing data.
type Options struct {
	// DisallowUnknownFields refuses object keys the destination struct
	// does not declare.
	DisallowUnknownFields bool
	// MaxSize, when positive, refuses documents larger than it (a
	// *TooLargeError).
	MaxSize int
}

// TooLargeError reports a document over Options.MaxSize.
type TooLargeError struct{ Size, Max int }

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("JSON document is %d bytes, larger than the %d allowed", e.Size, e.Max)
}

// DuplicateKeyError reports the first object key that appears twice in the
// same object.
type DuplicateKeyError struct {
	Key string
	// Object is the path of the object holding the key, e.g. ".files[3]";
	// empty for the top-level object.
	Object string
}

// Path is the key's full path without a leading dot, e.g. "files[3].sha256".
func (e *DuplicateKeyError) Path() string {
	return strings.TrimPrefix(e.Object+"."+e.Key, ".")
}

func (e *DuplicateKeyError) Error() string {
	where := e.Object
	if where == "" {
		where = "(top level)"
	}
	return fmt.Sprintf("duplicate key %q in object %s", e.Key, where)
}

// Decode decodes exactly one JSON document from data into v. Errors from
// encoding/json (syntax, *json.UnmarshalTypeError, unknown fields) are
// returned unwrapped, so callers can inspect them; then trailing data
// (ErrTrailingData) and duplicate keys (*DuplicateKeyError) are refused.
func Decode(data []byte, v any, o Options) error {
	if o.MaxSize > 0 && len(data) > o.MaxSize {
		return &TooLargeError{Size: len(data), Max: o.MaxSize}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if o.DisallowUnknownFields {
		dec.DisallowUnknownFields()
	}
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return ErrTrailingData
	}
	return CheckDuplicateKeys(data)
}

// CheckDuplicateKeys walks the token stream of data and reports the first
// object key that appears twice in the same object as a *DuplicateKeyError.
func CheckDuplicateKeys(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	type frame struct {
		object    bool
		keys      map[string]bool
		expectKey bool   // object: the next string token is a key
		key       string // object: the current key
		index     int    // array: the current element
	}
	var stack []*frame
	// where names the object at the top of the stack, e.g. ".files[3]".
	where := func() string {
		var b strings.Builder
		for _, f := range stack[:len(stack)-1] {
			if f.object {
				b.WriteString("." + f.key)
			} else {
				fmt.Fprintf(&b, "[%d]", f.index)
			}
		}
		return b.String()
	}
	valueDone := func() {
		if len(stack) == 0 {
			return
		}
		if top := stack[len(stack)-1]; top.object {
			top.expectKey = true
		} else {
			top.index++
		}
	}
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		switch t := tok.(type) {
		case json.Delim:
			if t == '{' || t == '[' {
				stack = append(stack, &frame{object: t == '{', keys: map[string]bool{}, expectKey: true})
				continue
			}
			stack = stack[:len(stack)-1]
			valueDone()
		case string:
			if n := len(stack); n > 0 && stack[n-1].object && stack[n-1].expectKey {
				top := stack[n-1]
				if top.keys[t] {
					return &DuplicateKeyError{Key: t, Object: where()}
				}
				top.keys[t] = true
				top.key = t
				top.expectKey = false
				continue
			}
			valueDone()
		default:
			valueDone()
		}
	}
}
