package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

func body(t testing.TB, v any) []byte {
	t.Helper()
	f, err := Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if got := binary.BigEndian.Uint32(f); int(got) != len(f)-HeaderSize {
		t.Fatalf("length prefix %d, body %d bytes", got, len(f)-HeaderSize)
	}
	return f[HeaderSize:]
}

// nested builds a map whose single value is depth-1 nested fixarrays.
func nested(depth int) []byte {
	b := []byte{0x81, 0xa1, 'x'}
	for range depth - 1 {
		b = append(b, 0x91)
	}
	return append(b, 0x01)
}

func TestValidateAcceptsWhatMsgpackEncodes(t *testing.T) {
	values := []any{
		map[string]any{},
		map[string]any{"id": uint64(1 << 40), "op": "chat", "args": map[string]any{
			"f32": float32(1.5), "f64": 2.25, "neg": -1 << 40, "b": true, "n": nil,
			"bin": bytes.Repeat([]byte{7}, 300), "str": strings.Repeat("é", 40000),
			"arr": make([]int, 70000), "m": map[string]int{"a": -3, "b": 200},
		}},
		Reply{ID: 3, OK: false, Error: Errorf(CodeBusy, "queue full")},
	}
	for i, v := range values {
		if err := Validate(body(t, v), DefaultLimits); err != nil {
			t.Errorf("value %d: %v", i, err)
		}
	}
	// Extension values (timestamps) are legal msgpack too.
	ts := []byte{0x81, 0xa1, 't', 0xd6, 0xff, 0, 0, 0, 1}
	if err := Validate(ts, DefaultLimits); err != nil {
		t.Errorf("fixext timestamp: %v", err)
	}
}

func TestValidateRejects(t *testing.T) {
	map32Huge := []byte{0xdf, 0x80, 0, 0, 0} // claims 2^31 entries
	cases := map[string]struct {
		in   []byte
		rule string
	}{
		"empty":              {nil, "empty"},
		"not a map":          {[]byte{0x91, 0x01}, "not a msgpack map"},
		"map32 2^31 entries": {map32Huge, "element count"},
		"array32 huge":       {[]byte{0x81, 0xa1, 'a', 0xdd, 0xff, 0xff, 0xff, 0xff}, "element count"},
		"str32 huge":         {[]byte{0x81, 0xa1, 'a', 0xdb, 0x7f, 0, 0, 0}, "declared length"},
		"bin32 huge":         {[]byte{0x81, 0xa1, 'a', 0xc6, 0x7f, 0, 0, 0}, "declared length"},
		"ext32 huge":         {[]byte{0x81, 0xa1, 'a', 0xc9, 0x7f, 0, 0, 0, 1}, "declared length"},
		"too deep":           {nested(33), "nesting deeper than 32"},
		"truncated value":    {[]byte{0x81, 0xa1, 'a'}, "ends inside a value"},
		"truncated length":   {[]byte{0x81, 0xa1, 'a', 0xda, 0x00}, "ends inside a length"},
		"trailing bytes":     {[]byte{0x80, 0x00}, "trailing"},
		"never-used byte":    {[]byte{0x81, 0xa1, 'a', 0xc1}, "invalid type byte 0xc1"},
	}
	for name, c := range cases {
		err := Validate(c.in, DefaultLimits)
		var ve *ValidationError
		if !errors.As(err, &ve) || !strings.Contains(err.Error(), c.rule) {
			t.Errorf("%s: got %v, want a ValidationError about %q", name, err, c.rule)
		}
	}
	if err := Validate(nested(32), DefaultLimits); err != nil {
		t.Errorf("depth 32 is allowed: %v", err)
	}
}

// Hostile headers cost only the error value; valid frames cost nothing.
func TestValidateDoesNotAllocate(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are meaningless under the race detector")
	}
	for i, b := range [][]byte{{0xdf, 0x80, 0, 0, 0}, nested(10000)} {
		if n := testing.AllocsPerRun(50, func() { _ = Validate(b, DefaultLimits) }); n > 3 {
			t.Errorf("hostile input %d: %v allocations", i, n)
		}
	}
	valid := body(t, map[string]any{"a": make([]int, 1000), "b": map[string]string{"c": "d"}})
	if n := testing.AllocsPerRun(50, func() { _ = Validate(valid, DefaultLimits) }); n != 0 {
		t.Errorf("valid input: %v allocations", n)
	}
}

func TestDecodeRequest(t *testing.T) {
	req, err := DecodeRequest(body(t, map[string]any{"id": 7, "op": "tokenize", "args": map[string]any{"text": "hi"}}), DefaultLimits)
	if err != nil || req.ID != 7 || req.Op != "tokenize" {
		t.Fatalf("got %+v, %v", req, err)
	}
	var args TokenizeArgs
	if err := DecodeArgs(req.Op, req.Args, &args); err != nil || args.Text != "hi" {
		t.Fatalf("args %+v, %v", args, err)
	}
	bad := map[string]struct {
		v      any
		id     uint64
		expect string
	}{
		"no id":          {map[string]any{"op": "status"}, 0, `no "id"`},
		"negative id":    {map[string]any{"id": -1, "op": "status"}, 0, `"id" must be an unsigned integer`},
		"string id":      {map[string]any{"id": "1", "op": "status"}, 0, `got a string`},
		"zero id":        {map[string]any{"id": 0, "op": "status"}, 0, `≥ 1`},
		"op not string":  {map[string]any{"id": 2, "op": 5}, 2, `"op" must be a string, got an integer`},
		"missing op":     {map[string]any{"id": 2}, 2, `no "op"`},
		"args not map":   {map[string]any{"id": 3, "op": "status", "args": []int{1}}, 3, `"args" must be a map, got an array`},
		"unknown field":  {map[string]any{"id": 4, "op": "status", "extra": 1}, 4, `unknown request field "extra"`},
		"non-string key": {map[int]int{1: 2}, 0, "string keys"},
	}
	for name, c := range bad {
		req, err := DecodeRequest(body(t, c.v), DefaultLimits)
		var we *Error
		if !errors.As(err, &we) || we.Code != CodeBadRequest || !strings.Contains(we.Message, c.expect) {
			t.Errorf("%s: got %v, want bad_request containing %q", name, err, c.expect)
		}
		if req.ID != c.id {
			t.Errorf("%s: id %d, want %d", name, req.ID, c.id)
		}
	}
}

func TestDecodeArgsNamesTheField(t *testing.T) {
	raw := func(v any) msgpack.RawMessage { b, _ := msgpack.Marshal(v); return b }
	cases := map[string]struct {
		args   any
		expect string
	}{
		"wrong type":      {map[string]any{"max_tokens": "ten"}, "args.max_tokens must be an unsigned integer, got a string"},
		"negative":        {map[string]any{"max_tokens": -5}, "args.max_tokens must not be negative"},
		"unknown":         {map[string]any{"temprature": 1}, "unknown field args.temprature"},
		"nested unknown":  {map[string]any{"messages": []any{map[string]any{"role": "user", "colour": 1}}}, "args.messages"},
		"array elem type": {map[string]any{"stop": []any{1}}, "args.stop must be an array of strings"},
	}
	for name, c := range cases {
		var args ChatArgs
		err := DecodeArgs("chat", raw(c.args), &args)
		var we *Error
		if !errors.As(err, &we) || we.Code != CodeBadRequest || !strings.Contains(we.Message, c.expect) {
			t.Errorf("%s: got %v, want %q", name, err, c.expect)
		}
	}
	var args ChatArgs
	in := map[string]any{"messages": []any{map[string]any{"role": "user", "content": "hi"}}, "max_tokens": 9,
		"sampling": map[string]any{"temperature": 0.5, "top_k": 40}, "speculative": false}
	if err := DecodeArgs("chat", raw(in), &args); err != nil {
		t.Fatal(err)
	}
	if len(args.Messages) != 1 || args.Messages[0].Content != "hi" || *args.MaxTokens != 9 ||
		args.Sampling.TopK != 40 || args.Sampling.Temperature != 0.5 || *args.Speculative {
		t.Fatalf("decoded %+v", args)
	}
}

func TestReadFrame(t *testing.T) {
	f, _ := Marshal(map[string]int{"a": 1})
	got, err := ReadFrame(bytes.NewReader(f), 100)
	if err != nil || !bytes.Equal(got, f[4:]) {
		t.Fatalf("got %x, %v", got, err)
	}
	_, err = ReadFrame(bytes.NewReader([]byte{0, 0, 1, 0}), 100)
	var tl *TooLargeError
	if !errors.As(err, &tl) || tl.Size != 256 || tl.Max != 100 {
		t.Fatalf("oversized: %v", err)
	}
	if _, err := ReadFrame(bytes.NewReader(f[:len(f)-1]), 100); err == nil || !strings.Contains(err.Error(), "unexpected EOF") {
		t.Fatalf("truncated: %v", err)
	}
}

// FuzzDecodeRequest feeds arbitrary frames through the frame reader, the
// validator and request/args decoding: nothing may panic, and whatever the
// validator accepts must be well-formed msgpack.
func FuzzDecodeRequest(f *testing.F) {
	for _, v := range []any{
		map[string]any{"id": 1, "op": "hello", "args": map[string]any{"protocol": 1, "client": "x"}},
		map[string]any{"id": 2, "op": "chat", "args": map[string]any{"messages": []any{map[string]any{"role": "user", "content": "hi"}}}},
		map[string]any{"id": 3, "op": "detokenize", "args": map[string]any{"ids": []int{1, 2, 3}}},
		map[string]any{"id": 4, "op": "chat", "args": map[string]any{"messages": []any{map[string]any{"role": "user", "content": "hi"}},
			"format": map[string]any{"type": "object"}, "tool_choice": map[string]any{"name": "f"}}},
		map[string]any{"id": 5, "op": "generate", "args": map[string]any{"prompt": "x", "format": "json"}},
	} {
		fr, _ := Marshal(v)
		f.Add(fr)
	}
	f.Add([]byte{0, 0, 0, 5, 0xdf, 0x80, 0, 0, 0})
	// {id: 1, op: "a", op: "b"} and a bin key: refused for their content.
	f.Add([]byte{0, 0, 0, 15, 0x83, 0xa2, 'i', 'd', 0x01, 0xa2, 'o', 'p', 0xa1, 'a', 0xa2, 'o', 'p', 0xa1, 'b'})
	f.Add([]byte{0, 0, 0, 9, 0x82, 0xa2, 'i', 'd', 0x01, 0xc4, 0x01, 'o', 0x01})
	f.Add(append([]byte{0, 0, 0, 0x13}, nested(17)...))
	f.Fuzz(func(t *testing.T, frame []byte) {
		b, err := ReadFrame(bytes.NewReader(frame), 4096)
		if err != nil {
			return
		}
		req, err := DecodeRequest(b, Limits{MaxFrame: 4096, MaxDepth: 16})
		if err != nil {
			return
		}
		var chat ChatArgs
		_ = DecodeArgs(req.Op, req.Args, &chat)
		var gen GenerateArgs
		_ = DecodeArgs(req.Op, req.Args, &gen)
		var detok DetokenizeArgs
		_ = DecodeArgs(req.Op, req.Args, &detok)
		for _, o := range Ops {
			_ = o.CheckArgKeys(req.Args)
		}
		// A validated frame is structurally sound: skipping it must succeed
		// (keys may still be of types a map[string]any cannot hold).
		if err := msgpack.NewDecoder(bytes.NewReader(b)).Skip(); err != nil {
			t.Fatalf("validated frame is not well-formed msgpack: %v", err)
		}
		var anyv any
		_ = msgpack.Unmarshal(b, &anyv)
	})
}
