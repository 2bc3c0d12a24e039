package daemon_test

import (
	"io"
	"strings"
	"testing"
	"time"

	"github.com/forgedaemon/forged/daemon"
	"github.com/forgedaemon/forged/daemon/fakeengine"
)

// Issue 19 item 10, over the socket with raw frames: each deviation is a
// bad_request for the request that made it, and the connection goes on.
func TestConformanceProtocolDeviations(t *testing.T) {
	ts := startServer(t, daemon.Config{}, fakeengine.Options{})
	r := dialRaw(t, ts.path)

	// A hello whose client name is not UTF-8 is refused (it would appear
	// in every user's status).
	hello := []byte{0x83, 0xa2, 'i', 'd', 0x01, 0xa2, 'o', 'p', 0xa5, 'h', 'e', 'l', 'l', 'o', 0xa4, 'a', 'r', 'g', 's',
		0x82, 0xa8, 'p', 'r', 'o', 't', 'o', 'c', 'o', 'l', 0x01, 0xa6, 'c', 'l', 'i', 'e', 'n', 't', 0xa2, 'x', 0xff}
	r.writeBody(hello)
	if msg := expectError(t, r.read(), 1, "bad_request"); !strings.Contains(msg, "not valid UTF-8") {
		t.Fatalf("hello with invalid UTF-8: %s", msg)
	}
	r.hello()

	// {id: 2, op: models, op: config.get}: not config.get.
	r.writeBody([]byte{0x83, 0xa2, 'i', 'd', 0x02, 0xa2, 'o', 'p', 0xa6, 'm', 'o', 'd', 'e', 'l', 's',
		0xa2, 'o', 'p', 0xaa, 'c', 'o', 'n', 'f', 'i', 'g', '.', 'g', 'e', 't'})
	if msg := expectError(t, r.read(), 2, "bad_request"); !strings.Contains(msg, `the key "op" twice`) {
		t.Fatalf("duplicate op: %s", msg)
	}
	// A binary key ({id: 3, bin "op": "status"}).
	r.writeBody([]byte{0x82, 0xa2, 'i', 'd', 0x03, 0xc4, 0x02, 'o', 'p', 0xa6, 's', 't', 'a', 't', 'u', 's'})
	if msg := expectError(t, r.read(), 3, "bad_request"); !strings.Contains(msg, "a map key is binary data") {
		t.Fatalf("binary key: %s", msg)
	}
	// Unknown args keys, for ops whose handler reads none too.
	for i, op := range []string{"status", "models", "config.get", "session.open"} {
		id := uint64(10 + i)
		if msg := expectError(t, r.call(id, op, map[string]any{"verbose": true}), id, "bad_request"); !strings.Contains(msg, op+": unknown field args.verbose") {
			t.Fatalf("%s with an unknown arg: %s", op, msg)
		}
	}
	// ids past 32 bits must not run token 5; a negative seed is refused.
	if msg := expectError(t, r.call(20, "detokenize", map[string]any{"ids": []uint64{1<<32 + 5}}), 20, "bad_request"); !strings.Contains(msg, "args.ids[0] is 4294967301") {
		t.Fatalf("ids [2^32+5]: %s", msg)
	}
	if msg := expectError(t, r.call(21, "generate", map[string]any{"ids": []int{1}, "sampling": map[string]any{"seed": -5}}), 21, "bad_request"); !strings.Contains(msg, "args.sampling.seed must not be negative") {
		t.Fatalf("seed -5: %s", msg)
	}
	result(t, r.call(22, "status", nil)) // the connection goes on
}

// One id is in flight once: a non-streaming request may not take the id of
// a running stream (that would give the id two replies).
func TestConformanceIDInFlightForEveryOp(t *testing.T) {
	ts := startServer(t, daemon.Config{}, fakeengine.Options{})
	r := dialRaw(t, ts.path)
	r.hello()
	r.write(map[string]any{"id": 7, "op": "subscribe"})
	if ev := r.read(); ev["event"] != "state" {
		t.Fatalf("subscribe: %v", ev)
	}
	if msg := expectError(t, r.call(7, "status", nil), 7, "bad_request"); !strings.Contains(msg, "request id 7 is already in flight") {
		t.Fatalf("status reusing a stream's id: %s", msg)
	}
	expectError(t, r.cancelStream(8, 7), 7, "cancelled")
	result(t, r.call(7, "status", nil)) // free again
}

// Issue 19 item 1: streams per connection are capped (100k subscribes
// held 603 MB); the one past the cap is busy, naming the limit, and a
// finished stream makes room.
func TestConformanceStreamsPerConnection(t *testing.T) {
	ts := startServer(t, daemon.Config{MaxStreams: 3}, fakeengine.Options{})
	r := dialRaw(t, ts.path)
	r.hello()
	for id := 10; id < 13; id++ {
		r.write(map[string]any{"id": id, "op": "subscribe"})
		if ev := r.read(); ev["event"] != "state" {
			t.Fatalf("subscribe %d: %v", id, ev)
		}
	}
	if msg := expectError(t, r.call(13, "subscribe", nil), 13, "busy"); !strings.Contains(msg, "3 streaming requests in flight") || !strings.Contains(msg, "limits.streams_per_conn") {
		t.Fatalf("the stream past the cap: %s", msg)
	}
	result(t, r.call(20, "status", nil)) // non-streaming ops are not capped
	expectError(t, r.cancelStream(21, 10), 10, "cancelled")
	r.write(map[string]any{"id": 14, "op": "subscribe"})
	if ev := r.read(); ev["event"] != "state" || asUint(ev["id"]) != 14 {
		t.Fatalf("after a stream ended: %v", ev)
	}
}

// Issue 19 item 1: a connection that never says hello is closed at the
// hello deadline (20,000 of them exhausted the daemon's descriptors).
func TestConformanceHelloDeadline(t *testing.T) {
	ts := startServer(t, daemon.Config{HelloTimeout: 100 * time.Millisecond}, fakeengine.Options{})
	r := dialRaw(t, ts.path)
	if _, err := r.tryRead(30 * time.Second); err != io.EOF {
		t.Fatalf("a silent connection: %v, want the daemon to close it (EOF)", err)
	}
}
