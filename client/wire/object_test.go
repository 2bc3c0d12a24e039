package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

// obj is ObjectOf for tests: keys and values in the order written.
func obj(t testing.TB, kv ...any) Object {
	t.Helper()
	o, err := ObjectOf(kv...)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func pack(t testing.TB, v any) []byte {
	t.Helper()
	b, err := msgpack.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// weatherTool is a tool schema whose keys are deliberately not sorted at
// any level, as an OpenAI-style caller writes it.
func weatherTool(t testing.TB) Object {
	return obj(t, "type", "function",
		"function", obj(t,
			"name", "get_weather",
			"description", "Get the weather for a city",
			"parameters", obj(t,
				"type", "object",
				"properties", obj(t,
					"city", obj(t, "type", "string", "description", "City name"),
					"unit", obj(t, "type", "string", "enum", []string{"c", "f"}),
				),
				"required", []string{"city"},
			),
		),
	)
}

const weatherJSON = `{"type":"function","function":{"name":"get_weather","description":"Get the weather for a city",` +
	`"parameters":{"type":"object","properties":{"city":{"type":"string","description":"City name"},` +
	`"unit":{"type":"string","enum":["c","f"]}},"required":["city"]}}}`

// A chat request's tools and tool calls decode, re-encode and marshal to
// JSON with the caller's key order at every level (a Go map would sort
// "function" before "type").
func TestChatArgsKeepToolKeyOrder(t *testing.T) {
	call := obj(t, "type", "function", "function", obj(t, "name", "get_weather", "arguments", obj(t, "unit", "c", "city", "Paris")))
	args := pack(t, map[string]any{
		"messages": []any{map[string]any{"role": "assistant", "content": "", "tool_calls": []any{call}}},
		"tools":    []any{weatherTool(t)},
	})
	var a ChatArgs
	if err := DecodeArgs(OpChat, args, &a); err != nil {
		t.Fatal(err)
	}
	if len(a.Tools) != 1 || len(a.Messages) != 1 || len(a.Messages[0].ToolCalls) != 1 {
		t.Fatalf("decoded %+v", a)
	}
	got, err := json.Marshal(a.Tools[0])
	if err != nil || string(got) != weatherJSON {
		t.Fatalf("tool JSON (%v):\n got %s\nwant %s", err, got, weatherJSON)
	}
	msg, _ := json.Marshal(a.Messages[0])
	wantMsg := `{"role":"assistant","content":"","tool_calls":[{"type":"function","function":{"name":"get_weather","arguments":{"unit":"c","city":"Paris"}}}]}`
	if string(msg) != wantMsg {
		t.Fatalf("message JSON:\n got %s\nwant %s", msg, wantMsg)
	}
	// Re-encoding (what the Go client sends) passes the bytes through.
	if again := pack(t, a.Tools[0]); !bytes.Equal(again, weatherTool(t).Msgpack()) {
		t.Errorf("re-encoded tool differs from what was received")
	}
	// From JSON, as a Go client chooses the order.
	objs, err := ObjectsFromJSON([]byte("[" + weatherJSON + "]"))
	if err != nil || len(objs) != 1 || !bytes.Equal(objs[0].Msgpack(), weatherTool(t).Msgpack()) {
		t.Fatalf("ObjectsFromJSON: %v %v", objs, err)
	}
}

// Random values encoded by msgpack/v5 with sorted keys transcode to exactly
// what encoding/json (which also sorts) writes for the same values, floats
// kept in a float's form (floatForm); and the JSON converts back to msgpack
// that transcodes to the same JSON.
func TestObjectMatchesEncodingJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 500 {
		v := map[string]any{}
		for k := range rng.IntN(6) {
			v[randString(rng)+string(rune('a'+k))] = randValue(rng, 4)
		}
		var mp bytes.Buffer
		enc := msgpack.NewEncoder(&mp)
		enc.SetSortMapKeys(true)
		if err := enc.Encode(v); err != nil {
			t.Fatal(err)
		}
		var want bytes.Buffer
		jenc := json.NewEncoder(&want)
		jenc.SetEscapeHTML(false)
		if err := jenc.Encode(floatForm(v)); err != nil {
			t.Fatal(err)
		}
		obj, err := ObjectFromMsgpack(mp.Bytes())
		if err != nil {
			t.Fatalf("value %d: %v", i, err)
		}
		got, err := obj.MarshalJSON()
		if err != nil || string(got) != strings.TrimSuffix(want.String(), "\n") {
			t.Fatalf("value %d (%v):\n got %s\nwant %s", i, err, got, want.String())
		}
		back, err := ObjectFromJSON(got)
		if err != nil {
			t.Fatalf("value %d back from JSON: %v", i, err)
		}
		if again, _ := back.MarshalJSON(); !bytes.Equal(again, got) {
			t.Fatalf("value %d JSON → msgpack → JSON:\n got %s\nwant %s", i, again, got)
		}
	}
}

func randString(rng *rand.Rand) string {
	pieces := []string{"a", "Z", "é", "日本", "\"", "\\", "\n", "\t", "\x01", "\x1f", "<&>", "😀", " ", "\b", "\f"}
	var b strings.Builder
	for range rng.IntN(5) {
		b.WriteString(pieces[rng.IntN(len(pieces))])
	}
	return b.String()
}

// jsonFloat is a float as an Object writes it: encoding/json's digits,
// with ".0" when they would read back as an integer.
type jsonFloat[F float32 | float64] struct{ f F }

func (j jsonFloat[F]) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(j.f)
	if err == nil && !bytes.ContainsAny(b, ".eE") {
		b = append(b, ".0"...)
	}
	return b, err
}

// floatForm is v with every float wrapped in jsonFloat.
func floatForm(v any) any {
	switch x := v.(type) {
	case float64:
		return jsonFloat[float64]{x}
	case float32:
		return jsonFloat[float32]{x}
	case []any:
		l := make([]any, len(x))
		for i, e := range x {
			l[i] = floatForm(e)
		}
		return l
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = floatForm(e)
		}
		return m
	}
	return v
}

func randValue(rng *rand.Rand, depth int) any {
	n := 9
	if depth == 0 {
		n = 7
	}
	switch rng.IntN(n) {
	case 0:
		return nil
	case 1:
		return rng.IntN(2) == 0
	case 2:
		return int64(rng.Uint64()) >> rng.IntN(64)
	case 3:
		return rng.Uint64() >> rng.IntN(64)
	case 4:
		return (rng.Float64() - 0.5) * math.Pow(10, float64(rng.IntN(60)-30))
	case 5:
		return float32(rng.NormFloat64())
	case 6:
		return randString(rng)
	case 7:
		l := make([]any, rng.IntN(4))
		for i := range l {
			l[i] = randValue(rng, depth-1)
		}
		return l
	}
	m := map[string]any{}
	for range rng.IntN(4) {
		m[randString(rng)] = randValue(rng, depth-1)
	}
	return m
}

// Everything JSON cannot say is refused with an error naming where.
func TestObjectRejects(t *testing.T) {
	deep := []byte{0x81, 0xa1, 'x'}
	for range maxObjectDepth {
		deep = append(deep, 0x91)
	}
	deep = append(deep, 0x01)
	mp := map[string]struct {
		in   []byte
		want string
	}{
		"array":            {pack(t, []int{1}), "must be a map, got an array"},
		"nil":              {[]byte{0xc0}, "must be a map, got nil"},
		"empty":            {nil, "must be a map, got nothing"},
		"binary":           {pack(t, map[string]any{"a": map[string]any{"b": []byte{1}}}), "object.a.b: binary data"},
		"timestamp":        {append(pack(t, map[string]any{"a": []int{1}})[:3], 0x91, 0xd6, 0xff, 0, 0, 0, 1), "object.a[0]: msgpack extension"},
		"integer key":      {pack(t, map[int]int{3: 4}), "a map key is an integer"},
		"duplicate key":    {[]byte{0x81, 0xa1, 'p', 0x82, 0xa1, 'k', 1, 0xa1, 'k', 2}, `object.p: key "k" appears twice`},
		"NaN":              {pack(t, map[string]any{"n": math.NaN()}), "object.n: NaN has no JSON form"},
		"infinity float32": {pack(t, map[string]any{"n": float32(math.Inf(-1))}), "object.n: -Inf has no JSON form"},
		"bad UTF-8 value":  {pack(t, map[string]any{"s": "\xff"}), "object.s: a string is not valid UTF-8"},
		"bad UTF-8 key":    {pack(t, map[string]any{"\xff": 1}), "a map key is not valid UTF-8"},
		"too deep":         {deep, "nested deeper than 32"},
		"truncated":        {pack(t, map[string]any{"a": "bc"})[:5], "ends inside a value"},
		"count lies":       {[]byte{0xdf, 0x7f, 0xff, 0xff, 0xff}, "declared length of 2147483647 exceeds"},
		"str length lies":  {[]byte{0x81, 0xa1, 'a', 0xdb, 0x7f, 0, 0, 0}, "declared length"},
		"trailing":         {[]byte{0x80, 0x01}, "1 trailing bytes"},
		"never-used byte":  {[]byte{0x81, 0xa1, 'a', 0xc1}, "object.a: invalid msgpack type byte 0xc1"},
	}
	for name, c := range mp {
		_, err := ObjectFromMsgpack(c.in)
		var oe *objectError
		if !errors.As(err, &oe) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("msgpack %s: got %v, want an error containing %q", name, err, c.want)
		}
	}
	deepJSON := strings.Repeat(`{"a":`, maxObjectDepth+1) + "1" + strings.Repeat("}", maxObjectDepth+1)
	js := map[string]struct{ in, want string }{
		"array":         {`[1]`, "must be a JSON object, got an array"},
		"string":        {`"x"`, "must be a JSON object, got a string"},
		"not JSON":      {`{"a":}`, "object.a: not JSON"},
		"trailing":      {`{} {}`, "unexpected data after the JSON object"},
		"duplicate key": {`{"a":{"b":1,"b":2}}`, `object.a: key "b" appears twice`},
		"bad UTF-8":     {"{\"a\":\"\xff\"}", "not valid UTF-8"},
		"huge number":   {`{"a":[1e999]}`, "object.a[0]: the number 1e999 is out of range"},
		"too deep":      {deepJSON, "nested deeper than 32"},
		"unterminated":  {`{"a":[1,2`, "not JSON"},
	}
	for name, c := range js {
		_, err := ObjectFromJSON([]byte(c.in))
		var oe *objectError
		if !errors.As(err, &oe) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("JSON %s: got %v, want an error containing %q", name, err, c.want)
		}
	}
	// Just inside the depth limit is accepted.
	okDeep := strings.Repeat(`{"a":`, maxObjectDepth) + "1" + strings.Repeat("}", maxObjectDepth)
	if _, err := ObjectFromJSON([]byte(okDeep)); err != nil {
		t.Errorf("depth %d refused: %v", maxObjectDepth, err)
	}
	if _, err := ObjectOf("a"); err == nil || !strings.Contains(err.Error(), "key, value pairs; got 1 arguments") {
		t.Errorf("ObjectOf with an odd count: %v", err)
	}
	if _, err := ObjectOf("a", 1, 2, 3); err == nil || !strings.Contains(err.Error(), "argument 2 is a key and must be a string, got int") {
		t.Errorf("ObjectOf with an integer key: %v", err)
	}
	if _, err := ObjectsFromJSON([]byte(`[{}, 3]`)); err == nil || !strings.Contains(err.Error(), "[1]: object: must be a JSON object, got a number") {
		t.Errorf("ObjectsFromJSON with a number: %v", err)
	}
}

// A tool with no JSON form is a bad_request that names the field.
func TestChatArgsToolWithoutJSONForm(t *testing.T) {
	user := map[string]any{"role": "user", "content": "hi"}
	for _, c := range []struct {
		args       map[string]any
		field, why string
	}{
		{map[string]any{"messages": []any{user}, "tools": []any{weatherTool(t), map[string]any{"function": map[string]any{"name": []byte("x")}}}},
			"args.tools", "[1]: object.function.name: binary data"},
		{map[string]any{"messages": []any{user}, "tools": []any{"get_weather"}}, "args.tools", "[0]: object: must be a map, got a string"},
		{map[string]any{"messages": []any{map[string]any{"role": "assistant", "content": "", "tool_calls": []any{map[int]int{1: 2}}}}},
			"args.messages", "[0]: object: a map key is an integer"},
	} {
		err := DecodeArgs(OpChat, pack(t, c.args), &ChatArgs{})
		var we *Error
		if !errors.As(err, &we) || we.Code != CodeBadRequest || !strings.Contains(we.Message, c.field) || !strings.Contains(we.Message, c.why) {
			t.Errorf("got %v, want bad_request naming %s and %q", err, c.field, c.why)
		}
	}
}

// The zero Object is the empty map both ways.
func TestZeroObject(t *testing.T) {
	var o Object
	if j, err := o.MarshalJSON(); err != nil || string(j) != "{}" || !bytes.Equal(pack(t, o), []byte{0x80}) {
		t.Fatalf("zero object: %s %v", j, err)
	}
}

// FuzzObjectFromMsgpack: arbitrary bytes never panic or hang; whatever is
// accepted is valid JSON whose msgpack form transcodes back to the same JSON.
func FuzzObjectFromMsgpack(f *testing.F) {
	f.Add(weatherTool(f).Msgpack())
	f.Add(pack(f, map[string]any{"a": []any{1.5, float32(2), -7, uint64(1 << 63), nil, true, "é"}}))
	f.Add([]byte{0xdf, 0x7f, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, in []byte) {
		obj, err := ObjectFromMsgpack(in)
		if err != nil {
			return
		}
		j, err := obj.MarshalJSON()
		if err != nil || !json.Valid(j) {
			t.Fatalf("accepted %x but JSON %q invalid (%v)", in, j, err)
		}
		back, err := ObjectFromJSON(j)
		if err != nil {
			t.Fatalf("JSON %s not accepted back: %v", j, err)
		}
		if j2, _ := back.MarshalJSON(); !bytes.Equal(j, j2) {
			t.Fatalf("round trip: %s → %s", j, j2)
		}
	})
}

// FuzzObjectFromJSON: arbitrary text never panics; the JSON an accepted
// object emits is a fixed point (0e0 becomes 0.0, which stays 0.0; -0
// becomes 0 and -0.0 stays -0.0).
func FuzzObjectFromJSON(f *testing.F) {
	f.Add([]byte(weatherJSON))
	f.Add([]byte(`{"a":[1e300,-0.5,18446744073709551615,-9223372036854775808,"\u0000"]}`))
	f.Add([]byte(`{"a":[-0,-0.0,0,-00]}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		obj, err := ObjectFromJSON(in)
		if err != nil {
			return
		}
		j, err := obj.MarshalJSON()
		if err != nil || !json.Valid(j) {
			t.Fatalf("accepted %q but JSON %q invalid (%v)", in, j, err)
		}
		back, err := ObjectFromJSON(j)
		if err != nil {
			t.Fatalf("JSON %s not accepted back: %v", j, err)
		}
		if j2, _ := back.MarshalJSON(); !bytes.Equal(j, j2) {
			t.Fatalf("round trip: %s → %s", j, j2)
		}
	})
}

// BenchmarkToolJSON: a tool schema from msgpack to the JSON the template
// reads, through Object (order kept) and through a Go map (the old path,
// keys sorted), for the ratio.
func BenchmarkToolJSON(b *testing.B) {
	raw := weatherTool(b).Msgpack()
	b.Run("object", func(b *testing.B) {
		for b.Loop() {
			var o Object
			if err := msgpack.Unmarshal(raw, &o); err != nil {
				b.Fatal(err)
			}
			if _, err := json.Marshal(o); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("map", func(b *testing.B) {
		for b.Loop() {
			var m map[string]any
			if err := msgpack.Unmarshal(raw, &m); err != nil {
				b.Fatal(err)
			}
			if _, err := json.Marshal(m); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// Keys lists the keys in the order written; Decode reads the JSON form.
func TestObjectKeysAndDecode(t *testing.T) {
	o, err := ObjectFromJSON([]byte(`{"zeta": 1, "alpha": {"b": [true]}, "mid": "é"}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := o.Keys(); !slices.Equal(got, []string{"zeta", "alpha", "mid"}) {
		t.Errorf("keys %v", got)
	}
	var v struct {
		Zeta  int               `json:"zeta"`
		Alpha map[string][]bool `json:"alpha"`
		Mid   string            `json:"mid"`
	}
	if err := o.Decode(&v); err != nil || v.Zeta != 1 || !v.Alpha["b"][0] || v.Mid != "é" {
		t.Errorf("decoded %+v, %v", v, err)
	}
	if keys := (Object{}).Keys(); len(keys) != 0 {
		t.Errorf("the zero Object has keys %v", keys)
	}
}

// Numbers keep their source form through an Object, as Python's json
// reads them: a float stays a float (300.0, 1e2 → 100.0, -0.0), an integer
// an integer (-0 is 0), so the chat template's tojson prints what
// transformers' would (daemon: TestChatFloatArgumentsRenderAsPython).
func TestObjectNumbersKeepFloatForm(t *testing.T) {
	in := `{"a":300.0,"b":300,"c":1e-06,"d":-0.0,"e":-0,"f":1e21,"g":1e2,"h":[1.0,2,0.5],"i":18446744073709551615}`
	want := `{"a":300.0,"b":300,"c":0.000001,"d":-0.0,"e":0,"f":1e+21,"g":100.0,"h":[1.0,2,0.5],"i":18446744073709551615}`
	obj, err := ObjectFromJSON([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if j, _ := obj.MarshalJSON(); string(j) != want {
		t.Fatalf("JSON form\n got %s\nwant %s", j, want)
	}
	// A float32 from a msgpack client: integral, still a float.
	f32, err := ObjectOf("w", float32(300))
	if err != nil {
		t.Fatal(err)
	}
	if j, _ := f32.MarshalJSON(); string(j) != `{"w":300.0}` {
		t.Fatalf("float32 300: %s", j)
	}
}
