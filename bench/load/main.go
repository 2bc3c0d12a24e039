// Command load is the acceptance load test of issue #19: one uid opens
// connections, sessions, subscribe streams and generation requests up to
// every cap the daemon reports, while a second uid's interactive request is
// timed to its first token, unloaded and loaded. It prints the median
// first-token latencies and their ratio, and the daemon's open file
// descriptors and resident memory under load, and exits 1 when the ratio
// exceeds --max-ratio or the daemon exceeds --max-fds or --max-rss.
//
// It runs as root (the two users are child processes started with
// syscall.SysProcAttr credentials: the flood as uid 65534, the timed
// requests as uid 65533), over a Unix socket only, bounded in count
// (--conns, --streams, the daemon's caps) and time (--timeout).
//
// Without --socket it starts its own daemon (the protocol daemon over the
// fake engine, --token-delay per token) and measures that process; with
// --socket and --pid it measures a running forged instead (whose socket
// directory the two uids must be able to reach).
//
// The caps are read from config.get: limits the daemon reports under the
// names in capKeys are used, else the flags' values, so the tool follows the
// daemon's limits as they are added.
//
// usage: go run ./bench/load [--socket S --pid P] [--conns N] [--streams N] [--probes N] [--timeout D]
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/forgedaemon/forged/client"
	"github.com/forgedaemon/forged/client/wire"
	"github.com/forgedaemon/forged/daemon"
	"github.com/forgedaemon/forged/daemon/fakeengine"
)

const roleEnv = "FORGED_LOAD_ROLE"

type flags struct {
	socket     string
	pid        int
	conns      int
	streams    int
	probes     int
	genTokens  int
	tokenDelay time.Duration
	timeout    time.Duration
	maxRatio   float64
	maxFDs     int
	maxRSS     int64
	// set by the orchestrator for the flood from config.get
	capSessConn, capSessUID, capPerUID int
}

func main() {
	var f flags
	flag.StringVar(&f.socket, "socket", "", "a running daemon's socket (default: start a fake-engine daemon)")
	flag.IntVar(&f.pid, "pid", 0, "with --socket: the daemon's pid, for its fd count and RSS")
	flag.IntVar(&f.conns, "conns", 512, "connections the flood opens at most (a daemon's connection cap, if it reports one, wins when lower)")
	flag.IntVar(&f.streams, "streams", 16, "subscribe streams per connection at most (likewise)")
	flag.IntVar(&f.probes, "probes", 30, "timed interactive requests, unloaded and loaded each")
	flag.IntVar(&f.genTokens, "gen-tokens", 8, "max_tokens of the flood's generation requests (0: none)")
	flag.DurationVar(&f.tokenDelay, "token-delay", 2*time.Millisecond, "the started daemon's fake engine: time per token")
	flag.DurationVar(&f.timeout, "timeout", 2*time.Minute, "the whole run")
	flag.Float64Var(&f.maxRatio, "max-ratio", 2, "loaded / unloaded median first-token latency allowed")
	flag.IntVar(&f.maxFDs, "max-fds", 0, "open fds the daemon may hold under load (0: conns + 64)")
	flag.Int64Var(&f.maxRSS, "max-rss", 512<<20, "resident bytes the daemon may hold under load")
	flag.IntVar(&f.capSessConn, "cap-sessions-per-conn", 1<<20, "(flood) the daemon's sessions per connection")
	flag.IntVar(&f.capSessUID, "cap-sessions-per-uid", 1<<20, "(flood) the daemon's sessions per uid")
	flag.IntVar(&f.capPerUID, "cap-per-uid", 16, "(flood) the daemon's generations per uid")
	flag.Parse()
	var err error
	switch os.Getenv(roleEnv) {
	case "daemon":
		err = serveFake(f)
	case "flood":
		err = flood(f)
	case "probe":
		err = probe(f)
	default:
		err = orchestrate(f)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "load:", err)
		os.Exit(1)
	}
}

// serveFake is the daemon role: the real protocol daemon over the fake
// engine on --socket until stdin closes.
func serveFake(f flags) error {
	ln, err := daemon.Listen(f.socket)
	if err != nil {
		return err
	}
	srv, err := daemon.New(fakeengine.New(fakeengine.Options{TokenDelay: f.tokenDelay}), daemon.Config{
		SocketPath: f.socket, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		return err
	}
	go func() { io.Copy(io.Discard, os.Stdin); srv.Shutdown() }()
	fmt.Println("LISTENING")
	return srv.Serve(context.Background(), ln)
}

// capKeys are the config.get names of the caps the flood fills, first
// match wins; a name the daemon does not report falls back to the flag.
var capKeys = map[string][]string{
	"conns":             {"connections_per_uid", "max_connections_per_uid", "max_conns_per_uid"},
	"streams":           {"streams_per_connection", "max_streams_per_connection", "max_streams"},
	"sessions_per_conn": {"sessions_per_connection"},
	"sessions_per_uid":  {"sessions_per_uid"},
	"per_uid":           {"per_uid"},
	"per_caller":        {"per_caller"},
}

// caps reads config.get as a plain map and picks the caps.
func caps(ctx context.Context, socket string) (map[string]int, error) {
	c, err := client.Dial(ctx, socket, client.Options{Name: "load-admin"})
	if err != nil {
		return nil, err
	}
	defer c.Close()
	var res struct {
		Config map[string]any `msgpack:"config"`
	}
	if err := c.Admin(ctx, wire.OpConfigGet, wire.Empty{}, &res); err != nil {
		return nil, fmt.Errorf("config.get (run as root or the daemon's user): %w", err)
	}
	out := map[string]int{}
	for name, keys := range capKeys {
		for _, k := range keys {
			if v, ok := asInt(res.Config[k]); ok {
				out[name] = v
				break
			}
		}
	}
	return out, nil
}

func asInt(v any) (int, bool) {
	switch n := v.(type) {
	case int8, int16, int32, int64, int, uint8, uint16, uint32, uint64, uint:
		var i int
		fmt.Sscan(fmt.Sprint(n), &i)
		return i, true
	}
	return 0, false
}

// child starts this program in role as uid/gid with args, stdout piped.
func child(ctx context.Context, role string, uid uint32, args ...string) (*exec.Cmd, *bufio.Scanner, io.WriteCloser, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, nil, nil, err
	}
	cmd := exec.CommandContext(ctx, self, args...)
	cmd.Env = append(os.Environ(), roleEnv+"="+role)
	cmd.Stderr = os.Stderr
	if uid != 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: uid}}
	}
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, nil, nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, nil, nil, fmt.Errorf("starting the %s as uid %d: %w", role, uid, err)
	}
	sc := bufio.NewScanner(out)
	sc.Buffer(nil, 1<<20)
	return cmd, sc, in, nil
}

// expect reads lines until one starts with prefix and returns the rest.
func expect(sc *bufio.Scanner, prefix string) (string, error) {
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), prefix); ok {
			return strings.TrimSpace(rest), nil
		}
	}
	return "", fmt.Errorf("child ended before %q: %v", prefix, sc.Err())
}

const (
	floodUID = 65534
	probeUID = 65533
)

func orchestrate(f flags) error {
	if os.Getuid() != 0 {
		return errors.New("run as root: the flood and the timed requests are started as uids 65534 and 65533")
	}
	ctx, cancel := context.WithTimeout(context.Background(), f.timeout)
	defer cancel()
	pid := f.pid
	if f.socket == "" {
		dir, err := os.MkdirTemp("", "fload")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		os.Chmod(dir, 0o755) // the two uids reach the socket; the socket itself is 0666
		f.socket = filepath.Join(dir, "s")
		cmd, sc, in, err := child(ctx, "daemon", 0, "--socket", f.socket, "--token-delay", f.tokenDelay.String())
		if err != nil {
			return err
		}
		defer func() { in.Close(); cmd.Wait() }()
		if _, err := expect(sc, "LISTENING"); err != nil {
			return err
		}
		pid = cmd.Process.Pid
	}
	cp, err := caps(ctx, f.socket)
	if err != nil {
		return err
	}
	conns, streams := f.conns, f.streams
	if v, ok := cp["conns"]; ok && v < conns {
		conns = v
	}
	if v, ok := cp["streams"]; ok && v < streams {
		streams = v
	}
	maxFDs := f.maxFDs
	if maxFDs == 0 {
		maxFDs = conns + 64
	}
	fmt.Printf("daemon pid %d, socket %s; caps from config.get %v; flood: up to %d connections, %d streams each\n", pid, f.socket, cp, conns, streams)
	fd0, rss0 := procFDs(pid), procRSS(pid)

	unloaded, err := runProbe(ctx, f)
	if err != nil {
		return err
	}
	fmt.Printf("unloaded: median first token %.2f ms over %d requests (uid %d)\n", median(unloaded), len(unloaded), probeUID)

	args := []string{"--socket", f.socket, "--conns", fmt.Sprint(conns), "--streams", fmt.Sprint(streams), "--gen-tokens", fmt.Sprint(f.genTokens)}
	for _, k := range []string{"sessions_per_conn", "sessions_per_uid", "per_uid"} {
		if v, ok := cp[k]; ok {
			args = append(args, "--cap-"+strings.ReplaceAll(k, "_", "-"), fmt.Sprint(v))
		}
	}
	cmd, sc, in, err := child(ctx, "flood", floodUID, args...)
	if err != nil {
		return err
	}
	opened, err := expect(sc, "READY")
	if err != nil {
		return err
	}
	fmt.Printf("flood (uid %d) holds: %s\n", floodUID, opened)
	fd1, rss1 := procFDs(pid), procRSS(pid)
	loaded, perr := runProbe(ctx, f)
	fd2, rss2 := procFDs(pid), procRSS(pid)
	in.Close()
	done, _ := expect(sc, "DONE")
	cmd.Wait()
	if perr != nil {
		return perr
	}
	fmt.Printf("flood's requests: %s\n", done)
	ratio := median(loaded) / median(unloaded)
	fmt.Printf("loaded:   median first token %.2f ms over %d requests; ratio loaded/unloaded %.2f (bound %.1f)\n", median(loaded), len(loaded), ratio, f.maxRatio)
	fdMax, rssMax := max(fd1, fd2), max(rss1, rss2)
	fmt.Printf("daemon fds: %d idle, %d under load (bound %d); RSS: %.1f MiB idle, %.1f MiB under load (bound %.0f MiB)\n",
		fd0, fdMax, maxFDs, mib(rss0), mib(rssMax), mib(f.maxRSS))
	var fails []string
	if ratio > f.maxRatio {
		fails = append(fails, fmt.Sprintf("first-token ratio %.2f > %.1f", ratio, f.maxRatio))
	}
	if fdMax > maxFDs {
		fails = append(fails, fmt.Sprintf("fds %d > %d", fdMax, maxFDs))
	}
	if rssMax > f.maxRSS {
		fails = append(fails, fmt.Sprintf("RSS %.1f MiB > %.0f MiB", mib(rssMax), mib(f.maxRSS)))
	}
	if len(fails) > 0 {
		return errors.New("FAIL: " + strings.Join(fails, "; "))
	}
	fmt.Println("PASS")
	return nil
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

// runProbe runs the probe child and returns its first-token latencies (ms).
func runProbe(ctx context.Context, f flags) ([]float64, error) {
	cmd, sc, in, err := child(ctx, "probe", probeUID, "--socket", f.socket, "--probes", fmt.Sprint(f.probes))
	if err != nil {
		return nil, err
	}
	defer func() { in.Close(); cmd.Wait() }()
	line, err := expect(sc, "LATENCIES")
	if err != nil {
		return nil, err
	}
	var ms []float64
	if err := json.Unmarshal([]byte(line), &ms); err != nil {
		return nil, err
	}
	if len(ms) == 0 {
		return nil, errors.New("the probe timed no request")
	}
	return ms, nil
}

// probeArgs is a short generation from three token ids, not speculative.
func probeArgs(maxTokens uint64, priority string) wire.GenerateArgs {
	return wire.GenerateArgs{IDs: []uint32{1, 2, 3}, MaxTokens: &maxTokens, Speculative: new(bool), Priority: priority}
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

// probe is the second uid: interactive requests one after another, each
// timed from sending to its first token.
func probe(f flags) error {
	ctx, cancel := context.WithTimeout(context.Background(), f.timeout)
	defer cancel()
	c, err := client.Dial(ctx, f.socket, client.Options{Name: "interactive"})
	if err != nil {
		return err
	}
	defer c.Close()
	var ms []float64
	var firstErr error
	for range f.probes {
		start := time.Now()
		first := -1.0
		for _, err := range c.Generate(ctx, probeArgs(4, wire.PriorityInteractive)).Tokens() {
			if err != nil {
				firstErr = err
				break
			}
			if first < 0 {
				first = float64(time.Since(start).Microseconds()) / 1000
			}
		}
		if first >= 0 {
			ms = append(ms, first)
		}
	}
	if len(ms) == 0 && firstErr != nil {
		return fmt.Errorf("every timed request failed: %w", firstErr)
	}
	b, _ := json.Marshal(ms)
	fmt.Println("LATENCIES", string(b))
	return nil
}
