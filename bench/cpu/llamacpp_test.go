package main

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestParseLlamaBench reads a real llama-bench -o json run
// (testdata/llama-bench.json: bench/llamacpp/run.sh's llama.cpp on the
// medium preset's Q4_0 conversion, 2 threads, on the AMD EPYC VM).
func TestParseLlamaBench(t *testing.T) {
	out, err := os.ReadFile("testdata/llama-bench.json")
	if err != nil {
		t.Fatal(err)
	}
	r, err := parseLlamaBench(out, true)
	if err != nil {
		t.Fatal(err)
	}
	if r.prefill != 55.931348 || r.decode != 25.032209 || r.modelBytes != 567767296 {
		t.Errorf("got %+v", r)
	}
	for _, bad := range []string{
		`[]`,
		`{"n_prompt": 512}`,
		`[{"model_size": 1, "n_prompt": 512, "n_gen": 0, "avg_ts": 50}]`, // no tg128
		`[{"model_size": 0, "n_prompt": 512, "n_gen": 0, "avg_ts": 50}, {"model_size": 0, "n_prompt": 0, "n_gen": 128, "avg_ts": 20}]`,
	} {
		if _, err := parseLlamaBench([]byte(bad), true); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
	// tg128 alone: enough without the prefill, not with it.
	tg := []byte(`[{"model_size": 1, "n_prompt": 0, "n_gen": 128, "avg_ts": 20}]`)
	if r, err := parseLlamaBench(tg, false); err != nil || r.decode != 20 || r.prefill != 0 {
		t.Errorf("tg128 alone: %+v, %v", r, err)
	}
	if _, err := parseLlamaBench(tg, true); err == nil || !strings.Contains(err.Error(), "no pp512") {
		t.Errorf("tg128 alone with the prefill wanted: %v", err)
	}
}

// fakeBench writes an executable llama-bench into dir that records its
// arguments and prints a run's JSON.
func fakeBench(t *testing.T, dir string) {
	t.Helper()
	script := "#!/bin/sh\necho \"$@\" >> " + filepath.Join(dir, "args") + "\n" +
		`echo '[{"model_size": 1000, "n_prompt": 512, "n_gen": 0, "avg_ts": 60.5}, {"model_size": 1000, "n_prompt": 0, "n_gen": 128, "avg_ts": 21.25}]'` + "\n"
	if err := os.WriteFile(filepath.Join(dir, "llama-bench"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
}

func TestFindAndMeasurePeers(t *testing.T) {
	dir := t.TempDir()
	if _, err := findPeers([]string{dir}, "small", []int{1}); err == nil || !strings.Contains(err.Error(), "no executable llama-bench") {
		t.Errorf("no llama-bench: %v", err)
	}
	fakeBench(t, dir)
	if _, err := findPeers([]string{dir}, "small", []int{1}); err == nil || !strings.Contains(err.Error(), "no small-<type>.gguf") {
		t.Errorf("no models: %v", err)
	}
	for _, f := range []string{"small-Q4_0.gguf", "small-Q2_K.gguf", "small-BF16.gguf", "medium-Q4_0.gguf"} {
		if err := os.WriteFile(filepath.Join(dir, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	peers, err := findPeers([]string{dir}, "small", []int{1, 2})
	if err != nil {
		t.Fatal(err)
	}
	var modes []string
	for _, p := range peers {
		modes = append(modes, p.mode()+"/"+string(rune('0'+p.threads)))
	}
	if want := []string{"llama.cpp Q2_K/1", "llama.cpp Q2_K/2", "llama.cpp Q4_0/1", "llama.cpp Q4_0/2"}; !slices.Equal(modes, want) {
		t.Fatalf("peers %v, want %v (the BF16 source and other presets left out)", modes, want)
	}
	bw := func(threads int) float64 { return float64(threads) * 10e9 }
	for range 3 {
		if err := measurePeers(context.Background(), peers[:2], false, bw); err != nil {
			t.Fatal(err)
		}
	}
	args, _ := os.ReadFile(filepath.Join(dir, "args"))
	lines := strings.Split(strings.TrimSpace(string(args)), "\n")
	if len(lines) != 6 || lines[1] != "-m "+filepath.Join(dir, "small-Q2_K.gguf")+" -t 2 -p 512 -n 128 -r 1 -o json" {
		t.Errorf("llama-bench runs: %q", lines)
	}
	rows := peerRows("small", peers[:2], []bool{false}, 4000)
	if len(rows) != 2 {
		t.Fatalf("%d rows", len(rows))
	}
	r := rows[1]
	if r.Mode != "llama.cpp Q2_K" || r.Threads != 2 || r.Decode.Median != 21.25 || r.Prefill.Median != 60.5 ||
		r.MBPerToken != 0.001 || r.BitsPerWeight != 4 || !near(r.Ratio.Median, 1000*21.25/20e9) {
		t.Errorf("row %+v", r)
	}
}

// Two builds, one labelled: each gets its peers, named by the label.
func TestFindPeersBuilds(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	for _, d := range []string{a, b} {
		fakeBench(t, d)
		if err := os.WriteFile(filepath.Join(d, "small-Q4_0.gguf"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(b, "label"), []byte("AMX\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	peers, err := findPeers([]string{a, b}, "small", []int{2})
	if err != nil {
		t.Fatal(err)
	}
	if len(peers) != 2 || peers[0].mode() != "llama.cpp Q4_0" || peers[1].mode() != "llama.cpp AMX Q4_0" {
		t.Errorf("peers %+v", peers)
	}
	if err := os.WriteFile(filepath.Join(b, "label"), []byte("two\nlines"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := findPeers([]string{a, b}, "small", []int{2}); err == nil || !strings.Contains(err.Error(), "one line") {
		t.Errorf("a two-line label: %v", err)
	}
}

// A llama-bench that crashes in pp512 but runs tg128 alone: the peer
// measures decode only from then on, and its row says the prefill failed.
func TestPeerDecodeOnly(t *testing.T) {
	dir := t.TempDir()
	script := "#!/bin/sh\necho \"$@\" >> " + filepath.Join(dir, "args") + "\n" +
		"case \"$*\" in *'-p 512'*) echo 'Segmentation fault' >&2; exit 139;; esac\n" +
		`echo '[{"model_size": 1000, "n_prompt": 0, "n_gen": 128, "avg_ts": 30}]'` + "\n"
	if err := os.WriteFile(filepath.Join(dir, "llama-bench"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	p := &peer{bench: filepath.Join(dir, "llama-bench"), model: "m.gguf", quant: "Q4_0", threads: 2}
	bw := func(int) float64 { return 1e9 }
	for range 2 {
		if err := measurePeers(context.Background(), []*peer{p}, false, bw); err != nil {
			t.Fatal(err)
		}
	}
	args, _ := os.ReadFile(filepath.Join(dir, "args"))
	lines := strings.Split(strings.TrimSpace(string(args)), "\n")
	if len(lines) != 3 || !strings.Contains(lines[0], "-p 512") || !strings.Contains(lines[1], "-p 0") || !strings.Contains(lines[2], "-p 0") {
		t.Errorf("llama-bench runs %q: want pp512 tried once, then tg128 alone", lines)
	}
	rows := peerRows("small", []*peer{p}, []bool{false}, 4000)
	if !rows[0].NoPrefill || rows[0].Decode.Median != 30 {
		t.Errorf("row %+v", rows[0])
	}
	var out strings.Builder
	writeTable(&out, rows)
	if !strings.Contains(out.String(), "— (pp512 failed)") {
		t.Errorf("table:\n%s", out.String())
	}
}

func TestPeerFailure(t *testing.T) {
	dir := t.TempDir()
	script := "#!/bin/sh\necho 'error: failed to load model' >&2\nexit 1\n"
	if err := os.WriteFile(filepath.Join(dir, "llama-bench"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	p := &peer{bench: filepath.Join(dir, "llama-bench"), model: "m.gguf", threads: 1}
	if _, _, err := p.measure(context.Background()); err == nil || !strings.Contains(err.Error(), "failed to load model") {
		t.Errorf("error %v, want llama-bench's message", err)
	}
}

// FuzzParseLlamaBench: any bytes give either an error or a result with
// positive rates and size, never a panic.
func FuzzParseLlamaBench(f *testing.F) {
	if b, err := os.ReadFile("testdata/llama-bench.json"); err == nil {
		f.Add(b)
	}
	f.Add([]byte(`[{"model_size": 1, "n_prompt": 512, "n_gen": 0, "avg_ts": 5}]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := parseLlamaBench(b, true)
		if err == nil && (r.decode <= 0 || r.prefill <= 0 || r.modelBytes <= 0) {
			t.Fatalf("accepted %+v", r)
		}
	})
}
