// Command tokenizer-bench is the Go side of bench/tokenizer/run.sh: encode
// throughput of ane/text/tokenizer on the texts of an encodings file, measured
// the same way as bench.mjs measures the baselines (Hugging Face tokenizers
// and the transformers.js port): whole passes over all texts, word cache
// warm, until the time budget is spent. It checks every line's ids first
// and prints one JSON line.
//
// usage: go run ./bench/tokenizer TOKENIZER_JSON_OR_DIR ENCODINGS_JSONL SECONDS
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"syscall"
	"time"

	"github.com/forgedaemon/forged/ane/text/tokenizer"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "tokenizer-bench:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) != 3 {
		return fmt.Errorf("usage: tokenizer-bench TOKENIZER ENCODINGS_JSONL SECONDS")
	}
	seconds, err := strconv.ParseFloat(args[2], 64)
	if err != nil {
		return fmt.Errorf("SECONDS: %w", err)
	}
	loadStart := time.Now()
	tok, err := tokenizer.Load(args[0])
	if err != nil {
		return err
	}
	loadTime := time.Since(loadStart)

	f, err := os.Open(args[1])
	if err != nil {
		return err
	}
	defer f.Close()
	var texts []string
	bytes := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	for line := 1; sc.Scan(); line++ {
		var c struct {
			Text string `json:"text"`
			IDs  []int  `json:"ids"`
		}
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			return fmt.Errorf("%s line %d: %w", args[1], line, err)
		}
		if got := tok.Encode(c.Text); !slices.Equal(got, c.IDs) {
			return fmt.Errorf("%s line %d: encoding differs from the reference", args[1], line)
		}
		texts = append(texts, c.Text)
		bytes += len(c.Text)
	}
	if err := sc.Err(); err != nil {
		return err
	}

	passes := 0
	cpuStart := cpuSeconds()
	start := time.Now()
	var elapsed time.Duration
	for elapsed.Seconds() < seconds {
		for _, t := range texts {
			tok.Encode(t)
		}
		passes++
		elapsed = time.Since(start)
	}
	cpu := cpuSeconds() - cpuStart
	return json.NewEncoder(os.Stdout).Encode(map[string]any{
		"impl":           "go ane/text/tokenizer",
		"go":             runtime.Version(),
		"load_seconds":   loadTime.Seconds(),
		"passes":         passes,
		"bytes_per_pass": bytes,
		"seconds":        elapsed.Seconds(),
		"mb_per_s":       float64(bytes) * float64(passes) / elapsed.Seconds() / 1e6,
		"cpu_seconds":    cpu,
		"mb_per_cpu_s":   float64(bytes) * float64(passes) / cpu / 1e6,
	})
}

// cpuSeconds is the user+system CPU time of this process: on a shared,
// loaded machine MB per CPU-second is steadier than MB per wall second.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}
