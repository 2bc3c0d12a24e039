package wire

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/vmihailenco/msgpack/v5"
)

// Object is a msgpack map whose key order is significant: a tool schema in
// chat's tools or a message's tool_calls. The chat template renders these
// with tojson in the caller's key order (as Hugging Face does from the
// caller's JSON), so they are carried as the caller's encoded bytes rather
// than as a Go map, which would sort the keys.
//
// On the wire an Object is an ordinary msgpack map; decoding one checks that
// it has a JSON form (string keys, no duplicates, no binary or extension
// values, finite numbers, valid UTF-8). MarshalJSON emits that JSON with the
// keys in their wire order, and UnmarshalJSON takes JSON in any order, so a
// Go caller chooses the order by writing the JSON. The zero Object is {}.
type Object struct {
	raw  []byte // exactly one msgpack map with a JSON form
	json []byte // that form, compact, keys in raw's order
}

// ObjectFromJSON converts a JSON object to an Object, keeping its key order.
func ObjectFromJSON(data []byte) (Object, error) {
	raw, err := jsonToMsgpack(data)
	if err != nil {
		return Object{}, err
	}
	return ObjectFromMsgpack(raw) // and back, for the compact JSON
}

// ObjectOf builds an Object from alternating keys and values, in that
// order: ObjectOf("type", "function", "function", fn). Keys are strings;
// values are anything msgpack encodes (a nested Object keeps its order, a
// Go map is written with sorted keys).
func ObjectOf(kv ...any) (Object, error) {
	if len(kv)%2 != 0 {
		return Object{}, problem("ObjectOf needs key, value pairs; got %d arguments", len(kv))
	}
	var buf bytes.Buffer
	enc := msgpack.NewEncoder(&buf)
	enc.UseCompactInts(true)
	enc.SetSortMapKeys(true)
	if err := enc.EncodeMapLen(len(kv) / 2); err != nil {
		return Object{}, err
	}
	for i, v := range kv {
		if _, ok := v.(string); !ok && i%2 == 0 {
			return Object{}, problem("ObjectOf: argument %d is a key and must be a string, got %T", i, v)
		}
		if err := enc.Encode(v); err != nil {
			return Object{}, err
		}
	}
	return ObjectFromMsgpack(buf.Bytes())
}

// ObjectFromMsgpack checks that raw is one msgpack map with a JSON form
// and wraps a copy of it.
func ObjectFromMsgpack(raw []byte) (Object, error) {
	j, err := msgpackToJSON(raw)
	if err != nil {
		return Object{}, err
	}
	return Object{raw: bytes.Clone(raw), json: j}, nil
}

// Msgpack returns the object's msgpack encoding (the caller must not modify it).
func (o Object) Msgpack() []byte {
	if o.raw == nil {
		return []byte{0x80}
	}
	return o.raw
}

// EncodeMsgpack writes the object's bytes as they are.
func (o Object) EncodeMsgpack(enc *msgpack.Encoder) error {
	_, err := enc.Writer().Write(o.Msgpack())
	return err
}

// DecodeMsgpack reads one map and checks that it has a JSON form.
func (o *Object) DecodeMsgpack(dec *msgpack.Decoder) error {
	raw, err := dec.DecodeRaw()
	if err != nil {
		return err
	}
	obj, err := ObjectFromMsgpack(raw)
	if err != nil {
		return err
	}
	*o = obj
	return nil
}

// MarshalJSON returns the object as compact JSON in its key order (the
// caller must not modify it).
func (o Object) MarshalJSON() ([]byte, error) {
	if o.json == nil {
		return []byte("{}"), nil
	}
	return o.json, nil
}

// UnmarshalJSON reads a JSON object, keeping its key order.
func (o *Object) UnmarshalJSON(data []byte) error {
	obj, err := ObjectFromJSON(data)
	if err != nil {
		return err
	}
	*o = obj
	return nil
}

// String is the object's JSON, for logs and test failures.
func (o Object) String() string {
	j, _ := o.MarshalJSON()
	return string(j)
}

// Objects is a list of Objects (chat's tools, a message's tool_calls) whose
// decoding errors name the entry.
type Objects []Object

// DecodeMsgpack reads an array of maps, each with a JSON form.
func (l *Objects) DecodeMsgpack(dec *msgpack.Decoder) error {
	n, err := dec.DecodeArrayLen()
	if err != nil {
		return err
	}
	if n < 0 { // nil
		*l = nil
		return nil
	}
	objs := make(Objects, 0, min(n, 64)) // n is bounded by the frame, not trusted further
	for i := range n {
		var o Object
		if err := o.DecodeMsgpack(dec); err != nil {
			return fmt.Errorf("[%d]: %w", i, err)
		}
		objs = append(objs, o)
	}
	*l = objs
	return nil
}

// ObjectsFromJSON converts a JSON array of objects (a tools list) to Objects.
func ObjectsFromJSON(data []byte) (Objects, error) {
	var items []json.RawMessage
	if err := json.Unmarshal(data, &items); err != nil {
		return nil, fmt.Errorf("not a JSON array of objects: %w", err)
	}
	objs := make(Objects, len(items))
	for i, item := range items {
		var err error
		if objs[i], err = ObjectFromJSON(item); err != nil {
			return nil, fmt.Errorf("[%d]: %w", i, err)
		}
	}
	return objs, nil
}

// Keys returns the object's keys in their order.
func (o Object) Keys() []string {
	dec := msgpack.NewDecoder(bytes.NewReader(o.Msgpack()))
	n, err := dec.DecodeMapLen()
	if err != nil {
		return nil // cannot happen: the bytes were checked when the Object was made
	}
	keys := make([]string, 0, max(n, 0))
	for range n {
		k, err := dec.DecodeString()
		if err != nil || dec.Skip() != nil {
			return keys
		}
		keys = append(keys, k)
	}
	return keys
}

// Decode unmarshals the object's JSON into v (a struct, or a map when the
// key order does not matter), as encoding/json does.
func (o Object) Decode(v any) error {
	j, _ := o.MarshalJSON()
	return json.Unmarshal(j, v)
}
