package rebuild

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/forgedaemon/forged/ane"
	"github.com/forgedaemon/forged/ane/rebuild/calib"
	"github.com/forgedaemon/forged/ane/rebuild/plan"
	"github.com/forgedaemon/forged/ane/ref"
	"github.com/forgedaemon/forged/internal/synth"
)

var (
	tinyOnce sync.Once
	tinyDir  string
	tinyErr  error
)

// tinyModel generates the synthetic tiny checkpoint once per test binary.
func tinyModel(t testing.TB) string {
	t.Helper()
	tinyOnce.Do(func() {
		tinyDir, tinyErr = os.MkdirTemp("", "rebuild-tiny-")
		if tinyErr == nil {
			tinyErr = synth.Generate(tinyDir, synth.Options{Preset: "tiny", Seed: 3})
		}
	})
	if tinyErr != nil {
		t.Fatal(tinyErr)
	}
	return tinyDir
}

func TestMain(m *testing.M) {
	if out := os.Getenv("REBUILD_KILL_CHILD"); out != "" {
		tinyOnce.Do(func() { tinyDir = os.Getenv("REBUILD_KILL_MODEL") })
		killChild(out) // never returns
	}
	code := m.Run()
	for _, d := range []string{tinyDir, exportDir} {
		if d != "" {
			os.RemoveAll(d)
		}
	}
	os.Exit(code)
}

// calibSet is n random rows of seq ids, written to and read back from .npy.
func calibSet(t testing.TB, n, seq, vocab int, seed uint64) *calib.Set {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 9))
	rows := make([][]int, n)
	for i := range rows {
		rows[i] = make([]int, seq)
		for j := range rows[i] {
			rows[i][j] = r.IntN(vocab)
		}
	}
	path := filepath.Join(os.TempDir(), fmt.Sprintf("rebuild-calib-%d-%d-%d-%d-%d.npy", os.Getpid(), n, seq, vocab, seed))
	defer os.Remove(path)
	if err := calib.WriteRows(path, rows); err != nil {
		t.Fatal(err)
	}
	set, err := calib.Load([]calib.Source{{Path: path}}, 0, vocab)
	if err != nil {
		t.Fatal(err)
	}
	return set
}

const mixedPlan = `{"0.mixer": "vector 2x16 + pcs", "1.gate": "LUT4 per-tensor + pcs", "1.up": "LUT4 per-tensor + pcs",
 "1.down": "LUT4 per-tensor + pcs", "2.basis": "plain", "3.down": "bf16"}`

func tinyOptions(t testing.TB, out string) Options {
	p, err := plan.Parse([]byte(mixedPlan))
	if err != nil {
		t.Fatal(err)
	}
	return Options{Model: tinyModel(t), Out: out, Plan: p, Calib: calibSet(t, 8, 24, 512, 1), Seed: 5, Threads: 1}
}

func readExport(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		files[e.Name()] = b
	}
	return files
}

func sameExport(t *testing.T, a, b string) {
	t.Helper()
	x, y := readExport(t, a), readExport(t, b)
	if len(x) != len(y) || len(x) != 2*4+1 {
		t.Fatalf("exports hold %d and %d files, want 9 each", len(x), len(y))
	}
	for name, data := range x {
		if !bytes.Equal(data, y[name]) {
			t.Errorf("%s differs", name)
		}
	}
}

// TestQuantizeTinyRunsAndIsDeterministic: a mixed-plan GPTQ export of the
// tiny model loads in the reference engine, its files are exactly the
// published set, its size is the prediction, and a second run gives the
// same bytes.
func TestQuantizeTinyRunsAndIsDeterministic(t *testing.T) {
	a := t.TempDir()
	var events []Event
	o := tinyOptions(t, a)
	o.Progress = func(e Event) { events = append(events, e) }
	rep, err := Quantize(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Written != rep.Predicted.ExportBytes || len(rep.Matrices) != 3*6+7+1 {
		t.Errorf("written %d, predicted %d, %d matrices", rep.Written, rep.Predicted.ExportBytes, len(rep.Matrices))
	}
	if last := events[len(events)-1]; last.Step != "done" || last.Done != last.Total || last.Total != 26 {
		t.Errorf("last progress event %+v", last)
	}
	if rep.HeldOut != 4 || rep.Matrices[0].SNRdB == nil || *rep.Matrices[0].SNRdB < 3 {
		t.Errorf("held-out SNR missing or poor: held %d, %+v", rep.HeldOut, rep.Matrices[0])
	}
	sameExport(t, a, tinyExport(t)) // the same inputs quantized by another run
	m, err := ref.OpenExport(tinyModel(t), a, ref.Options{Threads: 1})
	if err != nil {
		t.Fatalf("the reference engine cannot load the export: %v", err)
	}
	defer m.Close()
	s := m.NewSession()
	defer s.Close()
	logits, err := s.Feed([]int{1, 2, 3, 4})
	if err != nil || len(logits) != 512 {
		t.Fatalf("feed: %v", err)
	}
}

// TestResumeGivesSameBytes: a run stopped after layer 1 and resumed gives
// the bytes of an uninterrupted run; resuming with other inputs is refused.
func TestResumeGivesSameBytes(t *testing.T) {
	full, cut := tinyExport(t), t.TempDir()
	stop := errors.New("interrupted")
	o := tinyOptions(t, cut)
	o.AfterLayer = func(li int) error {
		if li == 1 {
			return stop
		}
		return nil
	}
	if _, err := Quantize(context.Background(), o); !errors.Is(err, stop) {
		t.Fatalf("interrupted run: %v", err)
	}
	if _, err := Quantize(context.Background(), tinyOptions(t, cut)); err == nil || !strings.Contains(err.Error(), "--resume") {
		t.Errorf("a second run over an interrupted one without --resume: %v", err)
	}
	other := tinyOptions(t, cut)
	other.Resume, other.Seed = true, 6
	if _, err := Quantize(context.Background(), other); err == nil || !strings.Contains(err.Error(), "different inputs") {
		t.Errorf("resume with another seed: %v", err)
	}
	o = tinyOptions(t, cut)
	o.Resume = true
	rep, err := Quantize(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if rep.ResumedLayers != 2 {
		t.Errorf("resumed after %d layers, want 2", rep.ResumedLayers)
	}
	sameExport(t, full, cut)
}

// TestBadInputBeforeWork: every bad input is an error naming the problem,
// and nothing is written.
func TestBadInputBeforeWork(t *testing.T) {
	// A checkpoint whose index no longer lists one tensor.
	missing := t.TempDir()
	entries, _ := os.ReadDir(tinyModel(t))
	for _, e := range entries {
		b, _ := os.ReadFile(filepath.Join(tinyModel(t), e.Name()))
		if e.Name() == "model.safetensors.index.json" {
			var idx map[string]any
			json.Unmarshal(b, &idx)
			delete(idx["weight_map"].(map[string]any), "model.language_model.layers.2.mlp.up_proj.weight")
			b, _ = json.Marshal(idx)
		}
		os.WriteFile(filepath.Join(missing, e.Name()), b, 0o644)
	}
	cases := []struct {
		name, plan string
		edit       func(o *Options)
		want       string
	}{
		{"unknown format", `{"1.gate": "LUT5"}`, nil, "LUT5"},
		{"pattern matching nothing", `{".*mlp\\.gate": "bf16"}`, nil, "matches no quantizable matrix"},
		{"plan key for a missing layer", `{"9.mixer": "bf16"}`, nil, "layer 9"},
		{"calibration id out of range", "", func(o *Options) { o.Calib.Rows[2][5] = 512 }, "token id 512"},
		{"missing tensor", "", func(o *Options) { o.Model = missing }, "layers.2.mlp.up_proj.weight"},
		{"unknown method", "", func(o *Options) { o.Method = "awq" }, `"awq"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out")
			o := tinyOptions(t, out)
			var err error
			if c.plan != "" {
				o.Plan, err = plan.Parse([]byte(c.plan))
			}
			if c.edit != nil {
				c.edit(&o)
			}
			if err == nil {
				_, err = Quantize(context.Background(), o)
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want it to mention %q", err, c.want)
			}
			if _, statErr := os.Stat(out); statErr == nil {
				t.Errorf("the output directory was created before the error")
			}
		})
	}
}

func anyNumerics() ane.Numerics { return ane.Numerics{} }

// killChild is the subprocess of TestKill9Resume: it quantizes the tiny
// model into out and, once layer 1 is checkpointed, waits to be killed.
func killChild(out string) {
	t := &testing.T{}
	o := tinyOptions(t, out)
	o.AfterLayer = func(li int) error {
		if li == 1 {
			os.WriteFile(filepath.Join(out, "child-ready"), nil, 0o644)
			select {} // SIGKILL arrives here
		}
		return nil
	}
	Quantize(context.Background(), o)
	os.Exit(3)
}

// TestKill9Resume: a run killed with SIGKILL after layer 1 resumes and
// produces the bytes of an uninterrupted run.
func TestKill9Resume(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a subprocess")
	}
	full := tinyExport(t)
	cut := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "REBUILD_KILL_CHILD="+cut, "REBUILD_KILL_MODEL="+tinyModel(t))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if _, err := os.Stat(filepath.Join(cut, "child-ready")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatal("the child never reached layer 1")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	os.Remove(filepath.Join(cut, "child-ready"))
	o := tinyOptions(t, cut)
	o.Resume = true
	rep, err := Quantize(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if rep.ResumedLayers != 2 {
		t.Errorf("resumed after %d layers, want 2", rep.ResumedLayers)
	}
	sameExport(t, full, cut)
}
