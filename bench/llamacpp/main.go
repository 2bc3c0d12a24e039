// Command llamacpp converts a synthetic checkpoint to a GGUF file for
// llama.cpp, the peer of issue #21's targets (bench/llamacpp/run.sh builds
// llama.cpp, quantizes the file with its llama-quantize and runs its
// llama-bench beside bench/cpu):
//
//	go run ./bench/llamacpp -preset medium -out medium-bf16.gguf
//
// The checkpoint is bench/cpu's (internal/synth, seed 1), so both engines
// run the same weights; gguf.go has the layout and what it changes.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/forgedaemon/forged/ane/format/gguf"
	"github.com/forgedaemon/forged/ane/format/hfconfig"
	"github.com/forgedaemon/forged/ane/ref"
	"github.com/forgedaemon/forged/internal/synth"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		fmt.Fprintln(os.Stderr, "bench/llamacpp:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("llamacpp", flag.ContinueOnError)
	preset := fs.String("preset", "medium", "synthetic preset ("+strings.Join(synth.PresetNames(), ", ")+")")
	out := fs.String("out", "", "the GGUF file to write")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *out == "" || fs.NArg() > 0 {
		return errors.New("usage: llamacpp -preset NAME -out FILE.gguf")
	}
	if _, err := synth.LookupPreset(*preset); err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "bench-llamacpp-"+*preset+"-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	return convert(dir, *preset, *out)
}

// convert generates the preset's checkpoint in dir and writes it to out.
func convert(dir, preset, out string) error {
	if err := synth.Generate(dir, synth.Options{Preset: preset, Seed: 1}); err != nil {
		return err
	}
	cm, err := hfconfig.LoadModel(dir)
	if err != nil {
		return err
	}
	src, closer, err := ref.OpenCheckpointSource(dir)
	if err != nil {
		return err
	}
	defer closer.Close()
	kvs, tensors, err := qwen35GGUF(dir, ref.ConfigFromModel(cm), src)
	if err != nil {
		return err
	}
	return gguf.Write(out, kvs, tensors)
}
