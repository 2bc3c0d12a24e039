package daemon_test

import (
	"bufio"
	"context"
	"encoding/binary"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/forgedaemon/forged/client"
	"github.com/forgedaemon/forged/client/wire"
	"github.com/forgedaemon/forged/daemon"
	"github.com/forgedaemon/forged/daemon/fakeengine"
	"github.com/forgedaemon/forged/daemon/modelbackend"
)

// echoServer answers every length-prefixed frame with the same bytes: the
// floor any request/reply protocol over a Unix socket pays.
func echoServer(b *testing.B) string {
	dir, _ := os.MkdirTemp("", "fe")
	b.Cleanup(func() { os.RemoveAll(dir) })
	path := filepath.Join(dir, "echo")
	ln, err := net.Listen("unix", path)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				br, bw := bufio.NewReader(c), bufio.NewWriter(c)
				for {
					body, err := wire.ReadFrame(br, 1<<20)
					if err != nil {
						return
					}
					var hdr [4]byte
					binary.BigEndian.PutUint32(hdr[:], uint32(len(body)))
					bw.Write(hdr[:])
					bw.Write(body)
					if bw.Flush() != nil {
						return
					}
				}
			}()
		}
	}()
	return path
}

func percentile(d []time.Duration, p float64) time.Duration {
	slices.Sort(d)
	return d[min(len(d)-1, int(float64(len(d))*p))]
}

// BenchmarkStatusVsEcho measures a status round trip through the Go client
// against a raw echo of the same request frame over the same socket type,
// interleaved so both see the same machine load; it reports p50 and p99 of
// each and their ratios (target: ≤ 3).
func BenchmarkStatusVsEcho(b *testing.B) {
	ts := startServer(b, daemon.Config{}, fakeengine.Options{})
	c, err := client.Dial(context.Background(), ts.path, client.Options{Name: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	echo, err := net.Dial("unix", echoServer(b))
	if err != nil {
		b.Fatal(err)
	}
	defer echo.Close()
	frame, _ := wire.Marshal(wire.OutRequest{ID: 1, Op: wire.OpStatus})
	reply := make([]byte, len(frame))
	ctx := context.Background()
	var st, ec []time.Duration
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		if _, err := c.Status(ctx); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		echo.Write(frame)
		if _, err := io.ReadFull(echo, reply); err != nil {
			b.Fatal(err)
		}
		t2 := time.Now()
		st, ec = append(st, t1.Sub(t0)), append(ec, t2.Sub(t1))
	}
	b.StopTimer()
	s50, s99, e50, e99 := percentile(st, .5), percentile(st, .99), percentile(ec, .5), percentile(ec, .99)
	b.ReportMetric(float64(s50.Nanoseconds())/1e3, "status-p50-µs")
	b.ReportMetric(float64(s99.Nanoseconds())/1e3, "status-p99-µs")
	b.ReportMetric(float64(e50.Nanoseconds())/1e3, "echo-p50-µs")
	b.ReportMetric(float64(e99.Nanoseconds())/1e3, "echo-p99-µs")
	b.ReportMetric(float64(s50)/float64(e50), "p50-ratio")
	b.ReportMetric(float64(s99)/float64(e99), "p99-ratio")
}

// BenchmarkTokenEvents streams long generations from the instant fake
// engine (one token per event) through the Go client and reports token
// events per second (target: ≥ 20,000) and the ratio to that target.
func BenchmarkTokenEvents(b *testing.B) {
	ts := startServer(b, daemon.Config{}, fakeengine.Options{})
	c, err := client.Dial(context.Background(), ts.path, client.Options{Name: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	maxTokens, speculative := uint64(20000), false
	events := 0
	b.ResetTimer()
	start := time.Now()
	for range b.N {
		s := c.Generate(context.Background(), wire.GenerateArgs{IDs: []uint32{1}, MaxTokens: &maxTokens, Speculative: &speculative})
		for _, err := range s.Tokens() {
			if err != nil {
				b.Fatal(err)
			}
			events++
		}
	}
	el := time.Since(start)
	b.StopTimer()
	rate := float64(events) / el.Seconds()
	b.ReportMetric(rate, "events/s")
	b.ReportMetric(rate/20000, "x-target")
}

var (
	fairClients  = flag.Int("fair.clients", 64, "BenchmarkFairness: concurrent clients")
	fairDuration = flag.Duration("fair.duration", 3*time.Second, "BenchmarkFairness: how long the clients chat")
	fairDelay    = flag.Duration("fair.delay", 200*time.Microsecond, "BenchmarkFairness: fake engine delay per token")
	fairModel    = flag.String("fair.model", "", "BenchmarkFairness: serve this checkpoint dir with modelbackend instead of the fake engine")
)

// BenchmarkFairness has many clients (each its own app name) chat in a loop
// for a fixed time through one generation slot, and reports errors and
// max/min tokens per client (target: 0 errors, ratio ≤ 1.5). By default it
// uses the fake engine with a per-token delay; -fair.model runs a real
// checkpoint (e.g. a tiny synthetic one) on the reference engine.
//
//	go test -run '^$' -bench Fairness -benchtime 1x ./daemon/ -args -fair.duration 60s -fair.model DIR
func BenchmarkFairness(b *testing.B) {
	var backend daemon.Backend = fakeengine.New(fakeengine.Options{TokenDelay: *fairDelay})
	if *fairModel != "" {
		rb, err := modelbackend.Open(*fairModel, modelbackend.Options{})
		if err != nil {
			b.Fatal(err)
		}
		defer rb.Close()
		backend = rb
	}
	dir, _ := os.MkdirTemp("", "ff")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "s")
	ln, err := daemon.Listen(path)
	if err != nil {
		b.Fatal(err)
	}
	srv, err := daemon.New(backend, daemon.Config{Slots: 1, MaxQueue: 1024, PerCaller: 1})
	if err != nil {
		b.Fatal(err)
	}
	go srv.Serve(context.Background(), ln)
	defer srv.Shutdown()
	for range b.N {
		tokens := make([]uint64, *fairClients)
		errs := make([]error, *fairClients)
		ctx, cancel := context.WithTimeout(context.Background(), *fairDuration)
		var wg sync.WaitGroup
		for i := range *fairClients {
			wg.Go(func() {
				c, err := client.Dial(context.Background(), path, client.Options{Name: fmt.Sprintf("app%02d", i)})
				if err != nil {
					errs[i] = err
					return
				}
				defer c.Close()
				max := uint64(16)
				for ctx.Err() == nil {
					res, err := c.Chat(ctx, wire.ChatArgs{MaxTokens: &max, Messages: []wire.Message{{Role: "user", Content: "hello"}}}).Result()
					if ctx.Err() != nil {
						return // the run ended mid-request: not an error, not counted
					}
					if err != nil {
						errs[i] = err
						return
					}
					tokens[i] += res.Usage.GeneratedTokens
				}
			})
		}
		wg.Wait()
		cancel()
		nErr := 0
		for i, err := range errs {
			if err != nil {
				nErr++
				b.Logf("client %d: %v", i, err)
			}
		}
		lo, hi := slices.Min(tokens), slices.Max(tokens)
		ratio := float64(hi) / float64(max(lo, 1))
		b.ReportMetric(float64(nErr), "errors")
		b.ReportMetric(float64(lo), "min-tokens")
		b.ReportMetric(float64(hi), "max-tokens")
		b.ReportMetric(ratio, "max/min")
	}
}
