package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// With -llamacpp DIR every round also runs llama.cpp's own benchmark,
// llama-bench, in DIR on the GGUF conversions of the same checkpoint that
// DIR holds as <preset>-<type>.gguf (bench/llamacpp/run.sh builds
// llama.cpp and writes them): pp512 and tg128 at each worker count, one
// repetition a round, so its rows are medians over the same interleaved
// rounds as the engine's. llama-bench's own warm-up run precedes each.

// peer is llama-bench on one GGUF file at one thread count.
type peer struct {
	bench, model string
	quant        string // the llama.cpp type, from the file name
	threads      int
	modelBytes   int64 // llama-bench's model_size: the tensors' bytes
	samples      [2]samples
}

// findPeers lists DIR's GGUF files for preset, one peer per file and
// thread count; an empty DIR means none. It is an error when DIR has no
// llama-bench or no file for the preset.
func findPeers(dir, preset string, threads []int) ([]*peer, error) {
	if dir == "" {
		return nil, nil
	}
	bench := filepath.Join(dir, "llama-bench")
	if st, err := os.Stat(bench); err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
		return nil, fmt.Errorf("-llamacpp %s: no executable llama-bench there (bench/llamacpp/run.sh builds it)", dir)
	}
	models, err := filepath.Glob(filepath.Join(dir, preset+"-*.gguf"))
	if err != nil {
		return nil, err
	}
	var peers []*peer
	for _, m := range models {
		quant := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(m), preset+"-"), ".gguf")
		if quant == "BF16" {
			continue // the conversion llama-quantize starts from
		}
		for _, th := range threads {
			peers = append(peers, &peer{bench: bench, model: m, quant: quant, threads: th})
		}
	}
	if len(peers) == 0 {
		return nil, fmt.Errorf("-llamacpp %s: no %s-<type>.gguf files for preset %s", dir, preset, preset)
	}
	return peers, nil
}

func (p *peer) mode() string { return "llama.cpp " + p.quant }

// measure runs llama-bench once: pp512 and tg128 tok/s.
func (p *peer) measure(ctx context.Context) (decode, prefill float64, err error) {
	cmd := exec.CommandContext(ctx, p.bench, "-m", p.model, "-t", fmt.Sprint(p.threads),
		"-p", fmt.Sprint(prefillTokens), "-n", fmt.Sprint(decodeTokens), "-r", "1", "-o", "json")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return 0, 0, fmt.Errorf("%s on %s: %w: %s", p.bench, p.model, err, lastLine(stderr.String()))
	}
	r, err := parseLlamaBench(out)
	if err != nil {
		return 0, 0, fmt.Errorf("%s on %s: %w", p.bench, p.model, err)
	}
	p.modelBytes = r.modelBytes
	return r.decode, r.prefill, nil
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
// avg_ts its tokens per second.
func parseLlamaBench(out []byte) (benchResult, error) {
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
	if r.prefill <= 0 || r.decode <= 0 || r.modelBytes <= 0 {
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
			rows = append(rows, summarize(c, p.samples[phaseIndex(loaded)], p.modelBytes, bf16Bytes))
		}
	}
	return slices.Clip(rows)
}
