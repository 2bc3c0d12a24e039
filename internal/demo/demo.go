// Package demo runs the main job end to end on one machine with nothing but
// Go: build a bundle from the tiny synthetic model through the real rebuild
// path, publish it on an in-process Hugging Face–compatible hub, start the
// daemon on a temporary socket and data directory, pull and verify the
// bundle over HTTP, load it with the reference backend, stream a chat
// answer through the socket client, and clean everything up. Every step is
// timed and reported.
package demo

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/forgedaemon/forged/ane/coreai/standin"
	"github.com/forgedaemon/forged/ane/rebuild"
	"github.com/forgedaemon/forged/ane/rebuild/calib"
	"github.com/forgedaemon/forged/ane/rebuild/plan"
	"github.com/forgedaemon/forged/ane/text/tokenizer"
	"github.com/forgedaemon/forged/bundle"
	"github.com/forgedaemon/forged/bundle/hub"
	"github.com/forgedaemon/forged/bundle/hubtest"
	"github.com/forgedaemon/forged/bundle/store"
	"github.com/forgedaemon/forged/client"
	"github.com/forgedaemon/forged/client/wire"
	"github.com/forgedaemon/forged/daemon"
	"github.com/forgedaemon/forged/daemon/modelbackend"
	"github.com/forgedaemon/forged/internal/synth"
	"github.com/forgedaemon/forged/internal/units"
)

// Repo is the repository name the demo hub serves the bundle under.
const Repo = "forge-demo/qwen3.8-tiny-synthetic"

// Notes are printed with every run: what the demo does and does not show.
var Notes = []string{
	"The built-in model is the synthetic 'tiny' preset: its weights are random, so the answer is gibberish by design.",
	"The demo bundle's Core AI packages are stand-in packages: the Linux stand-in of the Core AI bridge computes their functions on the CPU (real Core AI packages are built on a Mac). Nothing here runs on an ANE.",
	"On a Mac with the real bundle (anemll/anemll-forge-qwen3.8-27B) the same steps serve Qwen3.8-27B through Core AI; that has not been run here.",
}

// Options configure Run.
type Options struct {
	// Keep, if set, is where the artefacts are built and left (checkpoint,
	// export, bundle, the daemon's data directory); it must be absent or
	// empty. Otherwise everything goes into a temporary directory that is
	// removed at the end.
	Keep      string
	Prompt    string // the user message (default DefaultPrompt)
	MaxTokens int    // answer length limit (default 24)
	Seed      uint64 // synthetic model seed (default 1)
	// Step, if set, is called as each step finishes; Token for each
	// streamed piece of the answer.
	Step  func(Step)
	Token func(text string)
}

// DefaultPrompt is the demo's user message.
const DefaultPrompt = "Write one sentence about the Neural Engine."

// Step is one timed step of the demo.
type Step struct {
	Name    string  `json:"name"`
	OK      bool    `json:"ok"`
	Seconds float64 `json:"seconds"`
	Detail  string  `json:"detail"`
	Error   string  `json:"error,omitempty"`
}

// Report is what a run did.
type Report struct {
	OK            bool   `json:"ok"`
	Steps         []Step `json:"steps"`
	Repo          string `json:"repo"`
	Commit        string `json:"commit,omitempty"`
	Endpoint      string `json:"endpoint,omitempty"`
	Socket        string `json:"socket,omitempty"`
	Verify        string `json:"verify,omitempty"` // PASS or FAIL, from the pulled snapshot's full verify
	VerifiedFiles int    `json:"verified_files,omitempty"`
	CDNFiles      int    `json:"cdn_downloads,omitempty"` // GETs the hub redirected to its CDN listener
	Prompt        string `json:"prompt"`
	Streamed      string `json:"streamed_text"`
	Reply         string `json:"reply_text"`
	Tokens        int    `json:"streamed_events"`
	Generated     uint64 `json:"generated_tokens"`
	FinishReason  string `json:"finish_reason,omitempty"`
	Backend       string `json:"backend,omitempty"` // the engine that served the chat (hello's backend)
	// CoreAI is the same chat served through Core AI over the stand-in
	// bridge (the coreai step); CoreAISkipped says why it did not run.
	CoreAI        *CoreAIRun `json:"coreai,omitempty"`
	CoreAISkipped string     `json:"coreai_skipped,omitempty"`
	Kept          string     `json:"kept,omitempty"`
	States        []string   `json:"daemon_states"`       // as a subscribed client saw them, up to ready
	Leftovers     []string   `json:"leftovers,omitempty"` // what cleanup could not remove
	Seconds       float64    `json:"seconds"`
	Notes         []string   `json:"notes"`
}

// CoreAIRun is the coreai step's result.
type CoreAIRun struct {
	Bridge string `json:"bridge_release"`
	Reply  string `json:"reply_text"`
	Same   bool   `json:"same_as_reference"` // the same text as the reference engine's answer
}

// run holds the live parts a run must clean up.
type run struct {
	o       Options
	rep     *Report
	work    string // artefacts (Keep or a temp dir)
	sockDir string
	hub     *hubtest.Hub
	srv     *daemon.Server
	served  chan error
	res     *daemon.Residency
	cl      *client.Client
	cancel  context.CancelFunc
	// snapshot and commit are the pulled revision the load step serves.
	snapshot, commit string

	// A second client subscribes to the daemon's state events.
	watcher   *client.Client
	stopWatch context.CancelFunc
	watchDone chan struct{}
	mu        sync.Mutex
	states    []string
}

// Run performs the demo. The report is returned even when a step fails
// (the error names the step); cleanup always runs and is the last step.
func Run(ctx context.Context, o Options) (*Report, error) {
	if o.Prompt == "" {
		o.Prompt = DefaultPrompt
	}
	if o.MaxTokens <= 0 {
		o.MaxTokens = 24
	}
	if o.Seed == 0 {
		o.Seed = 1
	}
	start := time.Now()
	r := &run{o: o, rep: &Report{Repo: Repo, Prompt: o.Prompt, Notes: Notes}}
	ctx, r.cancel = context.WithCancel(ctx)
	err := r.setup()
	if err == nil {
		err = r.steps(ctx)
	}
	r.cancel()
	r.step("cleanup", func() (string, error) { return r.cleanup() })
	r.rep.Seconds = time.Since(start).Seconds()
	if err == nil {
		err = r.failed()
	}
	r.rep.OK = err == nil
	return r.rep, err
}

func (r *run) failed() error {
	for _, s := range r.rep.Steps {
		if !s.OK {
			return fmt.Errorf("demo step %s failed: %s", s.Name, s.Error)
		}
	}
	return nil
}

func (r *run) setup() error {
	if r.o.Keep != "" {
		if entries, err := os.ReadDir(r.o.Keep); err == nil && len(entries) > 0 {
			return fmt.Errorf("--keep %s: the directory is not empty", r.o.Keep)
		}
		if err := os.MkdirAll(r.o.Keep, 0o755); err != nil {
			return fmt.Errorf("--keep: %w", err)
		}
		r.work, r.rep.Kept = r.o.Keep, r.o.Keep
	} else {
		d, err := os.MkdirTemp("", "forge-demo-")
		if err != nil {
			return err
		}
		r.work = d
	}
	// The socket gets its own short directory: sun_path is about 100 bytes.
	d, err := os.MkdirTemp("", "fdemo-")
	if err != nil {
		return err
	}
	r.sockDir = d
	return nil
}

// step times fn and records it; the error is returned so the caller stops.
func (r *run) step(name string, fn func() (string, error)) error {
	t := time.Now()
	detail, err := fn()
	s := Step{Name: name, OK: err == nil, Seconds: time.Since(t).Seconds(), Detail: detail}
	if err != nil {
		s.Error = err.Error()
	}
	r.rep.Steps = append(r.rep.Steps, s)
	if r.o.Step != nil {
		r.o.Step(s)
	}
	if err != nil {
		return fmt.Errorf("demo step %s: %w", name, err)
	}
	return nil
}

func (r *run) path(name string) string { return filepath.Join(r.work, name) }

func (r *run) steps(ctx context.Context) error {
	steps := []struct {
		name string
		fn   func() (string, error)
	}{
		{"synth", r.synth},
		{"quantize", func() (string, error) { return r.quantize(ctx) }},
		{"bundle", r.assemble},
		{"hub", r.publish},
		{"daemon", r.startDaemon},
		{"pull", func() (string, error) { return r.pull(ctx) }},
		{"load", r.load},
		{"chat", func() (string, error) { return r.chat(ctx) }},
		{"coreai", func() (string, error) { return r.coreAI(ctx) }},
	}
	for _, s := range steps {
		if err := r.step(s.name, s.fn); err != nil {
			return err
		}
	}
	return nil
}

func (r *run) synth() (string, error) {
	if err := synth.Generate(r.path("checkpoint"), synth.Options{Preset: "tiny", Seed: r.o.Seed}); err != nil {
		return "", err
	}
	return fmt.Sprintf("synthetic BF16 qwen3_5 checkpoint, preset tiny (4 layers, hidden 64, random weights), seed %d", r.o.Seed), nil
}

// demoPlan mixes formats so the bundle exercises several export kinds.
const demoPlan = `{"0.mixer": "vector 2x16 + pcs", "1.gate": "LUT4 per-tensor + pcs", "1.up": "LUT4 per-tensor + pcs",
 "2.basis": "plain", "3.down": "bf16"}`

// calibrationText is tokenized into the calibration rows.
const calibrationText = `The daemon downloads the bundle, verifies every byte against its inventory and keeps it updated.
Apps talk to it over a Unix socket with length-prefixed msgpack frames: requests, replies and streamed events.
func main() { fmt.Println("hello, forge") }  SELECT id, name FROM models WHERE ready = 1;
<|im_start|>user
What is a context ladder?<|im_end|>
<|im_start|>assistant
It is the list of context sizes a session can grow through: 8K, 16K, 32K, 48K and 64K entries.<|im_end|>
`

func (r *run) quantize(ctx context.Context) (string, error) {
	model := r.path("checkpoint")
	tok, err := tokenizer.Load(model)
	if err != nil {
		return "", err
	}
	const rows, seq = 8, 32
	var stream []int
	for len(stream) < rows*seq {
		stream = append(stream, tok.Encode(calibrationText)...)
	}
	cut := make([][]int, rows)
	for i := range cut {
		cut[i] = stream[i*seq : (i+1)*seq]
	}
	npy := r.path("calibration.npy")
	if err := calib.WriteRows(npy, cut); err != nil {
		return "", err
	}
	set, err := calib.Load([]calib.Source{{Path: npy}}, 0, tok.VocabSize())
	if err != nil {
		return "", err
	}
	p, err := plan.Parse([]byte(demoPlan))
	if err != nil {
		return "", err
	}
	rep, err := rebuild.Quantize(ctx, rebuild.Options{Model: model, Out: r.path("export"), Plan: p, Calib: set,
		Method: rebuild.MethodGPTQ, Seed: 1, Threads: 2})
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("GPTQ, mixed plan, %d calibration rows × %d tokens (%d held out): %d matrices, %d tensor bytes as predicted",
		rep.CalibRows, rep.CalibSeq, rep.HeldOut, len(rep.Matrices), rep.Written), nil
}

func (r *run) assemble() (string, error) {
	rep, err := rebuild.Assemble(rebuild.AssembleOptions{Model: r.path("checkpoint"), Export: r.path("export"), Out: r.path("bundle"), StandIn: true})
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%d files, %s: model/ (embed_tokens_fp16.npy), export/ (+ small.safetensors, %d tensors), "+
		"coreai/ manifest for %d layers in %d chunks (stand-in packages computed from the export), release.json verified %s",
		rep.Files, units.Bytes(rep.Bytes), rep.SmallTensor, rep.Layers, rep.Chunks, rep.Verify.Status), nil
}

func (r *run) publish() (string, error) {
	r.hub = hubtest.New()
	// Files of 32 KiB or more go through the CDN redirect, as large files do on the real hub.
	r.hub.LFSThreshold = 32 << 10
	commit, err := r.hub.Publish(Repo, r.path("bundle"), "main")
	if err != nil {
		return "", err
	}
	r.rep.Commit, r.rep.Endpoint = commit, r.hub.URL
	return fmt.Sprintf("in-process Hugging Face–compatible hub on %s serves %s, main → %s", r.hub.URL, Repo, commit[:12]), nil
}

func (r *run) startDaemon() (string, error) {
	sock := filepath.Join(r.sockDir, "forged.sock")
	ln, err := daemon.Listen(sock)
	if err != nil {
		return "", err
	}
	srv, err := daemon.New(daemon.Unavailable{Reason: "no bundle installed yet", Bundle: wire.Bundle{Repo: Repo}},
		daemon.Config{SocketPath: sock, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		ln.Close()
		return "", err
	}
	srv.SetState(wire.StateUnavailable, "no bundle installed yet")
	r.srv, r.served, r.rep.Socket = srv, make(chan error, 1), sock
	go func() { r.served <- srv.Serve(context.Background(), ln) }()
	if err := r.watch(sock); err != nil {
		return "", err
	}
	return fmt.Sprintf("forged server listening on %s (data directory %s); a client subscribed to its state events", sock, r.path("data")), nil
}

// watch subscribes a client to the daemon's state events and records them.
func (r *run) watch(sock string) error {
	cl, err := client.Dial(context.Background(), sock, client.Options{Name: "forgectl-demo-watch"})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	r.watcher, r.stopWatch, r.watchDone = cl, cancel, make(chan struct{})
	go func() {
		defer close(r.watchDone)
		for ev, err := range cl.Subscribe(ctx) {
			if err != nil {
				return
			}
			r.mu.Lock()
			if n := len(r.states); n == 0 || r.states[n-1] != ev.State {
				r.states = append(r.states, ev.State)
			}
			r.mu.Unlock()
		}
	}()
	return nil
}

// statesUntil waits (briefly) until the subscriber has seen state, and
// returns what it saw.
func (r *run) statesUntil(state string) []string {
	deadline := time.Now().Add(5 * time.Second)
	for {
		r.mu.Lock()
		seen := slices.Clone(r.states)
		r.mu.Unlock()
		if slices.Contains(seen, state) || time.Now().After(deadline) {
			return seen
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (r *run) pull(ctx context.Context) (string, error) {
	s, err := store.Open(r.path("data"))
	if err != nil {
		return "", err
	}
	s.Client = hub.New(r.hub.URL, "")
	s.MarginBytes = 16 << 20 // the demo bundle is about a megabyte
	r.srv.SetState(wire.StateDownloading, "pulling "+Repo)
	sel := bundle.Selection{Runtime: bundle.ComponentCoreAI, Plain: true, IncludeExport: true}
	res, err := s.Pull(ctx, Repo, store.PullOptions{Revision: "main", Selection: sel})
	if err != nil {
		return "", err
	}
	r.srv.SetState(wire.StateVerifying, "verifying "+res.Commit)
	vr, err := s.Verify(Repo, true)
	if err != nil {
		return "", err
	}
	r.rep.Verify, r.rep.VerifiedFiles = vr.Status, vr.VerifiedFiles
	if err := vr.Err(); err != nil {
		return "", err
	}
	if res.Commit != r.rep.Commit {
		return "", fmt.Errorf("pulled commit %s, the hub published %s", res.Commit, r.rep.Commit)
	}
	for _, q := range r.hub.Requests() {
		if q.Listener == "cdn" && q.Method == "GET" {
			r.rep.CDNFiles++
		}
	}
	return fmt.Sprintf("%d files, %s downloaded over HTTP into the store (%d large ones through the CDN redirect); full verify %s (%d files hashed)",
		res.DownloadedFiles, units.Bytes(res.DownloadedBytes), r.rep.CDNFiles, vr.Status, vr.VerifiedFiles), nil
}

func (r *run) load() (string, error) {
	s, err := store.Open(r.path("data"))
	if err != nil {
		return "", err
	}
	st, err := s.Current(Repo)
	if err != nil {
		return "", err
	}
	r.snapshot, r.commit = s.SnapshotDir(Repo, st.Commit), st.Commit
	// The daemon's residency control loads (and at cleanup unloads) the
	// model, as it does for any served bundle, with the backend auto
	// chooses for this machine.
	r.res = r.srv.EnableResidency(daemon.ResidencyOptions{Bundle: Repo + "@" + st.Commit, KeepAlive: -1,
		Load: func(context.Context) (daemon.Backend, error) {
			return modelbackend.OpenSnapshot(r.snapshot, modelbackend.Options{Repo: Repo, Revision: st.Commit})
		}})
	if err := r.res.Load(context.Background(), "forgectl demo"); err != nil {
		return "", err
	}
	r.rep.States = r.statesUntil(wire.StateReady)
	if !slices.Contains(r.rep.States, wire.StateReady) {
		return "", fmt.Errorf("the subscribed client never saw state ready (saw %v)", r.rep.States)
	}
	info := backendOf(r.srv.Backend())
	r.rep.Backend = info
	return fmt.Sprintf("daemon residency loaded the served snapshot %s with backend %s; "+
		"states seen by the subscriber: %s", st.Commit[:12], info, strings.Join(r.rep.States, " → ")), nil
}

func (r *run) chat(ctx context.Context) (string, error) {
	cl, err := client.Dial(ctx, r.rep.Socket, client.Options{Name: "forgectl-demo"})
	if err != nil {
		return "", err
	}
	r.cl = cl
	if h := cl.Hello(); h.Bundle.Revision != r.rep.Commit {
		return "", fmt.Errorf("the daemon serves revision %q, want %s", h.Bundle.Revision, r.rep.Commit)
	}
	n := uint64(r.o.MaxTokens)
	st := cl.Chat(ctx, wire.ChatArgs{Messages: []wire.Message{{Role: "user", Content: r.o.Prompt}}, MaxTokens: &n, Thinking: "off"})
	var streamed strings.Builder
	for ev, err := range st.Tokens() {
		if err != nil {
			return "", err
		}
		streamed.WriteString(ev.Text)
		r.rep.Tokens++
		if r.o.Token != nil {
			r.o.Token(ev.Text)
		}
	}
	res, err := st.Result()
	if err != nil {
		return "", err
	}
	r.rep.Streamed, r.rep.Reply, r.rep.FinishReason = streamed.String(), res.Text, res.FinishReason
	r.rep.Generated = res.Usage.GeneratedTokens
	switch {
	case res.Revision != r.rep.Commit:
		return "", fmt.Errorf("the reply names revision %q, want %s", res.Revision, r.rep.Commit)
	case r.rep.Streamed == "":
		return "", errors.New("the streamed answer is empty")
	case r.rep.Streamed != res.Text:
		return "", fmt.Errorf("streamed text %q differs from the final reply %q", r.rep.Streamed, res.Text)
	}
	return fmt.Sprintf("%d tokens streamed over the socket by backend %s (%d events, finish %s, %.0f tok/s)",
		res.Usage.GeneratedTokens, r.rep.Backend, r.rep.Tokens, res.FinishReason, res.Usage.TokensPerS), nil
}

// backendOf names the engine a backend runs ("ref (kernels avx512)",
// "coreai (bridge …)").
func backendOf(b daemon.Backend) string {
	d, ok := b.(daemon.Describer)
	if !ok || d.BackendInfo() == nil {
		return "unknown"
	}
	i := d.BackendInfo()
	if i.Name == wire.BackendRef {
		return fmt.Sprintf("ref (the pure-Go engine over export/, kernels %s)", i.Kernels)
	}
	return fmt.Sprintf("coreai (the coreai/ packages through the bridge %q)", i.BridgeRelease)
}

// coreAI serves the same snapshot through the Core AI path — ane/coreai's
// purego binding over the stand-in bridge's cai_* C ABI, the chunk
// functions computed by refchunk from the export's effective weights —
// by switching the daemon to it, and asks the same question: greedy, so
// the answer must be the reference engine's. Without a C compiler the
// stand-in cannot be built and the step says so.
func (r *run) coreAI(ctx context.Context) (string, error) {
	bridge, err := standin.Shared()
	if errors.Is(err, standin.ErrNoCompiler) {
		r.rep.CoreAISkipped = err.Error()
		return "skipped: " + err.Error(), nil
	}
	if err != nil {
		return "", err
	}
	load := func(context.Context) (daemon.Backend, error) {
		return modelbackend.OpenCoreAIBundle(r.snapshot, modelbackend.Options{Repo: Repo, Revision: r.commit, Bridge: bridge})
	}
	if err := r.res.Switch(ctx, Repo+"@"+r.commit+" (coreai)", nil, load); err != nil {
		return "", err
	}
	n := uint64(r.o.MaxTokens)
	res, err := r.cl.Chat(ctx, wire.ChatArgs{Messages: []wire.Message{{Role: "user", Content: r.o.Prompt}}, MaxTokens: &n, Thinking: "off"}).Result()
	if err != nil {
		return "", err
	}
	info := backendOf(r.srv.Backend())
	r.rep.CoreAI = &CoreAIRun{Bridge: info, Reply: res.Text, Same: res.Text == r.rep.Reply}
	if !r.rep.CoreAI.Same {
		return "", fmt.Errorf("Core AI answered %q, the reference engine %q", res.Text, r.rep.Reply)
	}
	return fmt.Sprintf("the daemon switched to backend %s: %d tokens, the same answer text as the reference engine",
		info, res.Usage.GeneratedTokens), nil
}

// cleanup stops everything that was started, removes the temporary
// directories and reports anything left behind.
func (r *run) cleanup() (string, error) {
	var errs []error
	if r.cl != nil {
		r.cl.Close()
	}
	if r.watcher != nil {
		r.stopWatch()
		select {
		case <-r.watchDone:
		case <-time.After(10 * time.Second):
			errs = append(errs, errors.New("the state subscription did not end within 10 s"))
		}
		r.watcher.Close()
	}
	if r.res != nil {
		// Unloading closes the backend (its memory maps).
		if err := r.res.Unload(true, "forgectl demo finished"); err != nil {
			errs = append(errs, fmt.Errorf("unload: %w", err))
		}
	}
	if r.srv != nil {
		r.srv.Shutdown()
		select {
		case err := <-r.served:
			if err != nil && !errors.Is(err, context.Canceled) {
				errs = append(errs, fmt.Errorf("daemon: %w", err))
			}
		case <-time.After(10 * time.Second):
			errs = append(errs, errors.New("the daemon did not stop within 10 s"))
		}
	}
	if r.hub != nil {
		r.hub.Close()
	}
	var removed []string
	for _, d := range []string{r.sockDir, r.work} {
		if d == "" || d == r.o.Keep {
			continue
		}
		if err := os.RemoveAll(d); err != nil {
			errs = append(errs, err)
		}
		removed = append(removed, d)
	}
	for _, d := range removed {
		if _, err := os.Stat(d); !errors.Is(err, os.ErrNotExist) {
			r.rep.Leftovers = append(r.rep.Leftovers, d)
		}
	}
	if r.rep.Socket != "" {
		if _, err := os.Stat(r.rep.Socket); !errors.Is(err, os.ErrNotExist) {
			r.rep.Leftovers = append(r.rep.Leftovers, r.rep.Socket)
		}
	}
	if len(r.rep.Leftovers) > 0 {
		errs = append(errs, fmt.Errorf("left behind: %s", strings.Join(r.rep.Leftovers, ", ")))
	}
	if err := errors.Join(errs...); err != nil {
		return "", err
	}
	detail := "daemon stopped, hub closed, temporary directories removed"
	if r.o.Keep != "" {
		detail = "daemon stopped, hub closed; artefacts kept in " + r.o.Keep
	}
	return detail, nil
}
