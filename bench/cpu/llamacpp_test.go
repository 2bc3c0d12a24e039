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
	r, err := parseLlamaBench(out)
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
		if _, err := parseLlamaBench([]byte(bad)); err == nil {
			t.Errorf("%s: no error", bad)
		}
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
	if _, err := findPeers(dir, "small", []int{1}); err == nil || !strings.Contains(err.Error(), "no executable llama-bench") {
		t.Errorf("no llama-bench: %v", err)
	}
	fakeBench(t, dir)
	if _, err := findPeers(dir, "small", []int{1}); err == nil || !strings.Contains(err.Error(), "no small-<type>.gguf") {
		t.Errorf("no models: %v", err)
	}
	for _, f := range []string{"small-Q4_0.gguf", "small-Q2_K.gguf", "small-BF16.gguf", "medium-Q4_0.gguf"} {
		if err := os.WriteFile(filepath.Join(dir, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	peers, err := findPeers(dir, "small", []int{1, 2})
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
		r, err := parseLlamaBench(b)
		if err == nil && (r.decode <= 0 || r.prefill <= 0 || r.modelBytes <= 0) {
			t.Fatalf("accepted %+v", r)
		}
	})
}
