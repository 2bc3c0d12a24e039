package wire

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

// mp builds msgpack by hand, for what an encoder of Go values cannot
// write: duplicate keys, binary keys, invalid UTF-8 in a str.
type mp []byte

func (b mp) str(s string) mp  { return append(append(b, 0xd9, byte(len(s))), s...) }
func (b mp) bin(s string) mp  { return append(append(b, 0xc4, byte(len(s))), s...) }
func (b mp) m(n int) mp       { return append(b, 0x80|byte(n)) }
func (b mp) arr(n int) mp     { return append(b, 0x90|byte(n)) }
func (b mp) raw(x ...byte) mp { return append(b, x...) }
func (b mp) uint(v uint64) mp {
	return append(b, 0xcf, byte(v>>56), byte(v>>48), byte(v>>40), byte(v>>32), byte(v>>24), byte(v>>16), byte(v>>8), byte(v))
}

// envelope is {id: 1, op: op, args: <args>}.
func envelope(op string, args mp) []byte {
	return mp{}.m(3).str("id").raw(1).str("op").str(op).str("args").raw(args...)
}

func wantBadRequest(t *testing.T, name string, err error, want string) {
	t.Helper()
	var we *Error
	if !errors.As(err, &we) || we.Code != CodeBadRequest || !strings.Contains(we.Message, want) {
		t.Errorf("%s: got %v, want bad_request containing %q", name, err, want)
	}
}

// §3: a request is refused before any decoding when any map in it holds a
// key twice (msgpack/v5 keeps the last: {op: models, op: config.get} would
// run config.get), has a key that is not a string, or a string that is not
// valid UTF-8, wherever in the frame.
func TestDecodeRequestStrictMaps(t *testing.T) {
	// A map16 of 20 keys (past the pairwise comparison), the last one last.
	bigMap := func(last string) mp {
		b := mp{}.raw(0xde, 0, 20)
		for i := range 19 {
			b = b.str(fmt.Sprintf("k%02d", i)).raw(1)
		}
		return b.str(last).raw(2)
	}
	cases := map[string]struct {
		body []byte
		want string
	}{
		"duplicate op": {mp{}.m(3).str("id").raw(1).str("op").str("models").str("op").str("config.get"), `the key "op" twice`},
		"duplicate nested key": {envelope("chat", mp{}.m(1).str("messages").arr(1).m(3).
			str("role").str("user").str("content").str("a").str("content").str("b")), `the key "content" twice`},
		"duplicate in a big map": {envelope("status", mp{}.m(1).str("x").raw(bigMap("k07")...)), `the key "k07" twice`},
		"binary key":             {mp{}.m(2).str("id").raw(1).bin("op").str("status"), "a map key is binary data"},
		"binary key nested":      {envelope("tokenize", mp{}.m(1).bin("text").str("x")), "a map key is binary data"},
		"client not UTF-8": {envelope("hello", mp{}.m(2).str("protocol").raw(1).str("client").str("app\xff")),
			"not valid UTF-8"},
	}
	for name, c := range cases {
		req, err := DecodeRequest(c.body, DefaultLimits)
		wantBadRequest(t, name, err, c.want)
		// The frame is sound: the error goes to its request (id 1).
		if req.ID != 1 {
			t.Errorf("%s: error for id %d, want 1", name, req.ID)
		}
	}
	if req, err := DecodeRequest(mp{}.m(3).str("id").raw(1).str("op").str("status").str("id").raw(2), DefaultLimits); err == nil || req.ID != 0 {
		t.Errorf("two ids: id %d, %v; want id 0 and an error", req.ID, err)
	}
	// The same maps without the fault pass.
	for name, b := range map[string][]byte{
		"distinct keys": envelope("chat", mp{}.m(1).str("messages").arr(1).m(2).str("role").str("user").str("content").str("a")),
		"same key in sibling maps": envelope("chat", mp{}.m(1).str("messages").arr(2).
			m(1).str("role").str("user").m(1).str("role").str("user")),
		"big map": envelope("status", mp{}.m(1).str("x").raw(bigMap("k99")...)),
	} {
		if _, err := DecodeRequest(b, DefaultLimits); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	// The client's reading of daemon frames keeps to structure only.
	if err := Validate(mp{}.m(2).str("a").raw(1).str("a").raw(2), DefaultLimits); err != nil {
		t.Errorf("Validate checks more than structure: %v", err)
	}
}

// §3: an integer a field cannot hold is refused, at any depth: past 32 bits
// for a 32-bit field (ids [2^32+5] must not run token 5) and negative for
// an unsigned one (sampling.seed -5).
func TestDecodeArgsIntegerRanges(t *testing.T) {
	raw := func(v any) msgpack.RawMessage { b, _ := msgpack.Marshal(v); return b }
	var d DetokenizeArgs
	wantBadRequest(t, "ids 2^32+5", DecodeArgs("detokenize", msgpack.RawMessage(mp{}.m(1).str("ids").arr(2).raw(1).uint(1<<32+5)), &d),
		"args.ids[1] is 4294967301, past the largest value of this 32-bit field (4294967295)")
	if err := DecodeArgs("detokenize", msgpack.RawMessage(mp{}.m(1).str("ids").arr(1).uint(1<<32-1)), &d); err != nil || d.IDs[0] != 1<<32-1 {
		t.Errorf("ids [2^32-1]: %v %v", d.IDs, err)
	}
	var g GenerateArgs
	wantBadRequest(t, "generate ids", DecodeArgs("generate", raw(map[string]any{"ids": []int64{1 << 33}}), &g), "args.ids[0] is 8589934592")
	var c ChatArgs
	for _, seed := range []int64{-5, -1 << 40} {
		wantBadRequest(t, fmt.Sprint("seed ", seed), DecodeArgs("chat", raw(map[string]any{"sampling": map[string]any{"seed": seed}}), &c),
			"chat: args.sampling.seed must not be negative")
	}
	wantBadRequest(t, "top_k", DecodeArgs("chat", raw(map[string]any{"sampling": map[string]any{"top_k": -3}}), &c), "args.sampling.top_k must not be negative")
	if err := DecodeArgs("chat", raw(map[string]any{"sampling": map[string]any{"seed": uint64(1) << 63}}), &c); err != nil || c.Sampling.Seed != 1<<63 {
		t.Errorf("a 64-bit seed: %+v %v", c.Sampling, err)
	}
	var h HelloArgs
	wantBadRequest(t, "negative protocol", DecodeArgs("hello", raw(map[string]any{"protocol": -1, "client": "x"}), &h), "args.protocol must not be negative")
}

// §3: every op refuses args keys it does not have, even ops whose handler
// reads no args (status, models, config.get).
func TestCheckArgKeys(t *testing.T) {
	for _, op := range []string{OpStatus, OpModels, OpConfigGet, OpSubscribe, OpSessionOpen} {
		spec, _ := LookupOp(op)
		wantBadRequest(t, op, spec.CheckArgKeys(mp{}.m(1).str("verbose").raw(0xc3)), op+": unknown field args.verbose")
		if err := spec.CheckArgKeys(mp{}.m(0)); err != nil {
			t.Errorf("%s {}: %v", op, err)
		}
	}
	spec, _ := LookupOp(OpChat)
	if err := spec.CheckArgKeys(mp{}.m(2).str("messages").arr(0).str("max_tokens").raw(4)); err != nil {
		t.Errorf("chat: %v", err)
	}
	wantBadRequest(t, "chat", spec.CheckArgKeys(mp{}.m(2).str("messages").arr(0).str("max_token").raw(4)), "chat: unknown field args.max_token")
	for _, o := range Ops {
		if o.Args != nil {
			if reflect.TypeOf(o.Args).Kind() != reflect.Struct {
				t.Errorf("%s: Args %T is not a struct", o.Name, o.Args)
			}
		}
	}
}
