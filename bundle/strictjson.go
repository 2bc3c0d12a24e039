package bundle

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// decodeStrict decodes one JSON document into v. It rejects duplicate object
// keys anywhere in the document (encoding/json silently keeps the last one,
// which would let a crafted inventory say two different things), trailing
// data, and, when disallowUnknown is set, fields v does not declare.
func decodeStrict(data []byte, v any, disallowUnknown bool) error {
	if err := checkDuplicateKeys(data); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if disallowUnknown {
		dec.DisallowUnknownFields()
	}
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("unexpected data after the JSON document")
	}
	return nil
}

// checkDuplicateKeys walks the token stream and reports the first object
// key that appears twice in the same object, with its JSON path.
func checkDuplicateKeys(data []byte) error {
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
		if b.Len() == 0 {
			return "(top level)"
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
					return fmt.Errorf("duplicate key %q in object %s", t, where())
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
