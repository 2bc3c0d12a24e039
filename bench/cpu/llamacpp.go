package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// With -llamacpp DIR[,DIR…] every round also runs llama.cpp's own
// benchmark, llama-bench, in each DIR on the GGUF conversions of the same
// checkpoint that DIR holds as <preset>-<type>.gguf (bench/llamacpp/run.sh
// builds llama.cpp and writes them): pp512 and tg128 at each worker count,
// one repetition a round, so its rows are medians over the same
// interleaved rounds as the engine's. llama-bench's own warm-up run
// precedes each. A DIR's "label" file names its build in the rows (run.sh
// builds a second, AMX one where the CPU has AMX). When a llama-bench
// fails with both tests and succeeds with tg128 alone (the AMX build's
// prefill segfaults on the VM of session 13), that peer runs tg128 alone
// from then on and its prefill reads as not measured.

// peer is llama-bench on one GGUF file at one thread count.
type peer struct {
	bench, model string
	build        string // the directory's label, "" for none
	quant        string // the llama.cpp type, from the file name
	threads      int
	modelBytes   int64 // llama-bench's model_size: the tensors' bytes
	samples      [2]samples
	// decodeOnly: llama-bench failed with pp512 and runs tg128 alone.
	decodeOnly bool
}

// findPeers lists each DIR's GGUF files for preset, one peer per file
// and thread count; no DIR means none. It is an error when a DIR has no
// llama-bench or no file for the preset.
func findPeers(dirs []string, preset string, threads []int) ([]*peer, error) {
	var peers []*peer
	for _, dir := range dirs {
		bench := filepath.Join(dir, "llama-bench")
		if st, err := os.Stat(bench); err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
			return nil, fmt.Errorf("-llamacpp %s: no executable llama-bench there (bench/llamacpp/run.sh builds it)", dir)
		}
		build, err := readLabel(filepath.Join(dir, "label"))
		if err != nil {
			return nil, fmt.Errorf("-llamacpp %s: %w", dir, err)
		}
		models, err := filepath.Glob(filepath.Join(dir, preset+"-*.gguf"))
		if err != nil {
			return nil, err
		}
		n := len(peers)
		for _, m := range models {
			quant := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(m), preset+"-"), ".gguf")
			if quant == "BF16" {
				continue // the conversion llama-quantize starts from
			}
			for _, th := range threads {
				peers = append(peers, &peer{bench: bench, model: m, build: build, quant: quant, threads: th})
			}
		}
		if len(peers) == n {
			return nil, fmt.Errorf("-llamacpp %s: no %s-<type>.gguf files for preset %s", dir, preset, preset)
		}
	}
	return peers, nil
}

// readLabel reads a build's one-line label; a missing file is no label.
func readLabel(path string) (string, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	l := strings.TrimSpace(string(b))
	if len(l) > 40 || strings.ContainsAny(l, "\n|") {
		return "", fmt.Errorf("label %q: one line of at most 40 characters, no '|'", l)
	}
	return l, nil
}

func (p *peer) mode() string {
	if p.build != "" {
		return "llama.cpp " + p.build + " " + p.quant
	}
	return "llama.cpp " + p.quant
}

// measure runs llama-bench once: pp512 and tg128 tok/s, or tg128 alone
// (prefill 0) once pp512 has failed.
func (p *peer) measure(ctx context.Context) (decode, prefill float64, err error) {
	r, err := p.run(ctx)
	if err != nil && !p.decodeOnly && ctx.Err() == nil {
		p.decodeOnly = true
		if r, rerr := p.run(ctx); rerr == nil {
			p.modelBytes = r.modelBytes
			return r.decode, 0, nil
		}
		p.decodeOnly = false
	}
	if err != nil {
		return 0, 0, err
	}
	p.modelBytes = r.modelBytes
	return r.decode, r.prefill, nil
}

func (p *peer) run(ctx context.Context) (benchResult, error) {
	pp := prefillTokens
	if p.decodeOnly {
		pp = 0
	}
	cmd := exec.CommandContext(ctx, p.bench, "-m", p.model, "-t", fmt.Sprint(p.threads),
		"-p", fmt.Sprint(pp), "-n", fmt.Sprint(decodeTokens), "-r", "1", "-o", "json")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return benchResult{}, fmt.Errorf("%s on %s: %w: %s", p.bench, p.model, err, lastLine(stderr.String()))
	}
	r, err := parseLlamaBench(out, !p.decodeOnly)
	if err != nil {
		return benchResult{}, fmt.Errorf("%s on %s: %w", p.bench, p.model, err)
	}
	return r, nil
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// benchResult is what one llama-bench run reports.
type benchResult struct {
	decode, prefill float64
	modelBytes      int64
}

// parseLlamaBench reads llama-bench's -o json output: one object per test,
// the pp test with n_prompt > 0 and n_gen 0, the tg test the reverse,
// avg_ts its tokens per second; the pp test only when withPrefill.
func parseLlamaBench(out []byte, withPrefill bool) (benchResult, error) {
	var tests []struct {
		ModelSize int64   `json:"model_size"`
		NPrompt   int     `json:"n_prompt"`
		NGen      int     `json:"n_gen"`
		AvgTS     float64 `json:"avg_ts"`
	}
	if err := json.Unmarshal(out, &tests); err != nil {
		return benchResult{}, fmt.Errorf("llama-bench output: %w", err)
	}
	var r benchResult
	for _, t := range tests {
		switch {
		case t.NPrompt == prefillTokens && t.NGen == 0:
			r.prefill = t.AvgTS
		case t.NPrompt == 0 && t.NGen == decodeTokens:
			r.decode = t.AvgTS
		default:
			continue
		}
		r.modelBytes = t.ModelSize
	}
	if (withPrefill && r.prefill <= 0) || r.decode <= 0 || r.modelBytes <= 0 {
		if !withPrefill {
			return benchResult{}, fmt.Errorf("llama-bench output has no tg%d result with a model size", decodeTokens)
		}
		return benchResult{}, fmt.Errorf("llama-bench output has no pp%d and tg%d results with a model size", prefillTokens, decodeTokens)
	}
	return r, nil
}

// measurePeers runs every peer once, recording into the phase's samples
// with the round's read bandwidth at the peer's thread count.
func measurePeers(ctx context.Context, peers []*peer, loaded bool, bw func(threads int) float64) error {
	for _, p := range peers {
		d, pf, err := p.measure(ctx)
		if err != nil {
			return err
		}
		p.samples[phaseIndex(loaded)].add(d, pf, bw(p.threads))
	}
	return nil
}

// peerRows summarises the peers like the engine's rows, their bytes per
// token the model size (which counts the token embedding table whole,
// where a decode step reads one row of it).
func peerRows(preset string, peers []*peer, phases []bool, bf16Bytes int64) []row {
	var rows []row
	for _, loaded := range phases {
		for _, p := range peers {
			c := config{Preset: preset, Threads: p.threads, Mode: p.mode(), Loaded: loaded}
			r := summarize(c, p.samples[phaseIndex(loaded)], p.modelBytes, bf16Bytes)
			r.NoPrefill = p.decodeOnly
			rows = append(rows, r)
		}
	}
	return slices.Clip(rows)
}
