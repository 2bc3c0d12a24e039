package httpapi_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/forgedaemon/forged/client/wire"
	"github.com/forgedaemon/forged/daemon"
	"github.com/forgedaemon/forged/daemon/fakeengine"
	"github.com/forgedaemon/forged/daemon/modelbackend"
	"github.com/forgedaemon/forged/internal/testbundle"
)

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

// BenchmarkHTTPvsMsgpack measures what the HTTP API adds over the msgpack
// socket: the round trip of a 1-token completion, and the first token of a
// 200-token stream, on the instant fake engine (only the protocols differ;
// its 200 tokens arrive at once, the worst case for per-event flushing) and
// on the tiny synthetic bundle (a real engine's step between tokens). It
// reports each median and the HTTP/msgpack ratios (target ≤ 1.5 for the
// first token). Both run over Unix sockets with one kept-alive connection;
// timings on a shared machine are indicative only.
//
//	go test -run '^$' -bench HTTPvsMsgpack -benchtime 200x ./daemon/httpapi/
func BenchmarkHTTPvsMsgpack(b *testing.B) {
	b.Run("fake", func(b *testing.B) { benchProtocols(b, fakeengine.New(fakeengine.Options{})) })
	b.Run("tiny", func(b *testing.B) {
		be, err := modelbackend.OpenRefBundle(testbundle.Tiny(b, 4), modelbackend.Options{Repo: "forged/tiny", Revision: "abc", Ladder: []int{512}})
		if err != nil {
			b.Fatal(err)
		}
		benchProtocols(b, be)
	})
}

func benchProtocols(b *testing.B, be daemon.Backend) {
	h := start(b, be, daemon.Config{})
	cl := h.msgpack(b)
	hc := unixClient(h.httpSock)
	ctx := context.Background()
	msgs := []wire.Message{{Role: "user", Content: "hi"}}
	one, many := uint64(1), uint64(200)
	body := func(max int, stream bool) []byte {
		data, _ := json.Marshal(map[string]any{"messages": []any{map[string]any{"role": "user", "content": "hi"}}, "max_tokens": max, "stream": stream})
		return data
	}
	oneBody, streamBody := body(1, false), body(200, true)
	post := func(data []byte) *http.Response {
		resp, err := hc.Post(base+"/v1/chat/completions", "application/json", bytes.NewReader(data))
		if err != nil || resp.StatusCode != 200 {
			b.Fatalf("HTTP: %v %v", err, resp)
		}
		return resp
	}
	var mp1, ht1, mpFirst, htFirst []time.Duration
	msgpack1 := func() {
		t0 := time.Now()
		if _, err := cl.Chat(ctx, wire.ChatArgs{Messages: msgs, MaxTokens: &one}).Result(); err != nil {
			b.Fatal(err)
		}
		mp1 = append(mp1, time.Since(t0))
	}
	http1 := func() {
		t0 := time.Now()
		resp := post(oneBody)
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		ht1 = append(ht1, time.Since(t0))
	}
	msgpackFirst := func() {
		t0 := time.Now()
		s := cl.Chat(ctx, wire.ChatArgs{Messages: msgs, MaxTokens: &many})
		first := true
		for _, err := range s.Tokens() {
			if err != nil {
				b.Fatal(err)
			}
			if first {
				mpFirst, first = append(mpFirst, time.Since(t0)), false
			}
		}
	}
	httpFirst := func() {
		t0 := time.Now()
		resp := post(streamBody)
		br := bufio.NewReader(resp.Body)
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				b.Fatalf("stream ended before a token: %v", err)
			}
			if strings.Contains(line, `"delta":{"`) && !strings.Contains(line, `"role"`) {
				break // the first delta with text (content or reasoning) after the role chunk
			}
		}
		htFirst = append(htFirst, time.Since(t0))
		io.Copy(io.Discard, br)
		resp.Body.Close()
	}
	b.ResetTimer()
	for i := range b.N {
		// Alternate which protocol goes first, so neither always runs
		// after the other's 200 tokens (their garbage, their caches).
		if i%2 == 0 {
			msgpack1()
			http1()
			msgpackFirst()
			httpFirst()
		} else {
			http1()
			msgpack1()
			httpFirst()
			msgpackFirst()
		}
	}
	b.StopTimer()
	m1, h1, mf, hf := median(mp1), median(ht1), median(mpFirst), median(htFirst)
	b.ReportMetric(float64(m1.Microseconds()), "msgpack-1tok-µs")
	b.ReportMetric(float64(h1.Microseconds()), "http-1tok-µs")
	b.ReportMetric(float64(h1)/float64(m1), "ratio-1tok")
	b.ReportMetric(float64(mf.Microseconds()), "msgpack-first-µs")
	b.ReportMetric(float64(hf.Microseconds()), "http-first-µs")
	b.ReportMetric(float64(hf)/float64(mf), "ratio-first")
}
