// Command llamacpp converts a synthetic checkpoint to a GGUF file for
// llama.cpp, the peer of issue #21's targets (bench/llamacpp/run.sh builds
// llama.cpp, quantizes the file with its llama-quantize and runs its
// llama-bench beside bench/cpu), and compares llama.cpp's logits on the
// conversion with the engine's (crosscheck.sh):
//
//	go run ./bench/llamacpp -preset medium -out medium-BF16.gguf [-type F32]
//	go run ./bench/llamacpp -preset small -ids               # the compared prompt's token ids
//	go run ./bench/llamacpp -preset small -compare logits.txt  # llama.cpp's logits (logits.c) on them
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
	typ := fs.String("type", "BF16", "the matrices' type in the file (BF16, F32)")
	ids := fs.Bool("ids", false, "print the compared prompt's token ids and exit")
	compare := fs.String("compare", "", "compare llama.cpp's logits in this file (logits.c's output) with the engine's")
	if err := fs.Parse(args); err != nil {
		return err
	}
	modes := 0
	for _, set := range []bool{*out != "", *ids, *compare != ""} {
		if set {
			modes++
		}
	}
	if fs.NArg() > 0 || modes != 1 {
		return errors.New("usage: llamacpp -preset NAME (-out FILE.gguf [-type BF16|F32] | -ids | -compare LOGITS)")
	}
	p, err := synth.LookupPreset(*preset)
	if err != nil {
		return err
	}
	if *ids {
		fmt.Println(strings.Trim(fmt.Sprint(promptIDs(p.Vocab)), "[]"))
		return nil
	}
	matrixType := gguf.BF16
	switch *typ {
	case "BF16":
	case "F32":
		matrixType = gguf.F32
	default:
		return fmt.Errorf("-type %q: want BF16 or F32", *typ)
	}
	dir, err := os.MkdirTemp("", "bench-llamacpp-"+*preset+"-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	ck, err := openCheckpoint(dir, *preset)
	if err != nil {
		return err
	}
	defer ck.close()
	if *compare != "" {
		return compareLogits(ck, *compare, os.Stdout)
	}
	kvs, tensors, err := qwen35GGUF(dir, ck.cfg, ck.src, matrixType)
	if err != nil {
		return err
	}
	return gguf.Write(*out, kvs, tensors)
}

// checkpoint is a generated synthetic checkpoint, open.
type checkpoint struct {
	cfg   ref.Config
	src   ref.Source
	close func() error
}

// openCheckpoint generates the preset's checkpoint (seed 1, as bench/cpu)
// in dir and opens it.
func openCheckpoint(dir, preset string) (*checkpoint, error) {
	if err := synth.Generate(dir, synth.Options{Preset: preset, Seed: 1}); err != nil {
		return nil, err
	}
	cm, err := hfconfig.LoadModel(dir)
	if err != nil {
		return nil, err
	}
	src, closer, err := ref.OpenCheckpointSource(dir)
	if err != nil {
		return nil, err
	}
	return &checkpoint{cfg: ref.ConfigFromModel(cm), src: src, close: closer.Close}, nil
}
