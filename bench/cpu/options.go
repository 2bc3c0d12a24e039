package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/forgedaemon/forged/ane/kernels"
	"github.com/forgedaemon/forged/ane/ref"
	"github.com/forgedaemon/forged/internal/synth"
)

// options are the command line's choices, checked.
type options struct {
	presets []string
	threads []int
	modes   []string // ref.ModeFast, ref.ModeExact
	// levels are kernel sets (kernels.Levels) to compare, each a
	// configuration; empty: the machine's default, not named in the rows.
	levels []string
	rounds int
	json   bool
	load   bool
	// llamacpp are directories with llama-bench and the presets' GGUF
	// files (llamacpp.go), each a llama.cpp build; none by default.
	llamacpp []string
	// cpuProfile is a file for a CPU profile of the whole run (checkpoint
	// and export included: pprof's -focus picks the measured parts).
	cpuProfile string
}

// maxThreads bounds -threads: more workers than this is a typo, not a run.
const maxThreads = 256

// parseOptions reads the flags of args (without the program name); usage
// and errors go to out.
func parseOptions(args []string, out io.Writer) (options, error) {
	fs := flag.NewFlagSet("cpu", flag.ContinueOnError)
	fs.SetOutput(out)
	presets := fs.String("presets", "small,medium", "synthetic presets to measure, comma-separated ("+strings.Join(synth.PresetNames(), ", ")+")")
	threads := fs.String("threads", "1,2", "worker counts per session, comma-separated")
	modes := fs.String("mode", ref.ModeFast, "numeric modes, comma-separated ("+ref.ModeFast+", "+ref.ModeExact+")")
	levels := fs.String("kernels", "", "kernel levels to compare, comma-separated, each a configuration ("+strings.Join(kernels.Levels(), ", ")+"; default: the machine's own, "+kernels.KernelLevel()+")")
	var o options
	fs.IntVar(&o.rounds, "rounds", 5, "interleaved rounds (each configuration once per round; medians over rounds)")
	fs.BoolVar(&o.json, "json", false, "print the results as JSON instead of the table")
	fs.BoolVar(&o.load, "load", false, "also measure every configuration while a second process loads one core")
	llamacpp := fs.String("llamacpp", "", "also run llama.cpp's llama-bench from these directories (comma-separated, one per build) on their <preset>-<type>.gguf files (bench/llamacpp/run.sh)")
	fs.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of the whole run to this file (go tool pprof)")
	if err := fs.Parse(args); err != nil {
		return options{}, err
	}
	if fs.NArg() > 0 {
		return options{}, fmt.Errorf("unexpected argument %q (every setting is a flag)", fs.Arg(0))
	}
	var err error
	if o.presets, err = list("-presets", *presets, func(s string) (string, error) {
		_, err := synth.LookupPreset(s)
		return s, err
	}); err != nil {
		return options{}, err
	}
	if o.threads, err = list("-threads", *threads, func(s string) (int, error) {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > maxThreads {
			return 0, fmt.Errorf("%q is not a worker count in 1..%d", s, maxThreads)
		}
		return n, nil
	}); err != nil {
		return options{}, err
	}
	if o.modes, err = list("-mode", *modes, func(s string) (string, error) {
		if s != ref.ModeFast && s != ref.ModeExact {
			return "", fmt.Errorf("%q is not %q or %q", s, ref.ModeFast, ref.ModeExact)
		}
		return s, nil
	}); err != nil {
		return options{}, err
	}
	if *llamacpp != "" {
		if o.llamacpp, err = list("-llamacpp", *llamacpp, func(s string) (string, error) { return s, nil }); err != nil {
			return options{}, err
		}
	}
	if *levels != "" {
		if o.levels, err = list("-kernels", *levels, func(s string) (string, error) {
			if !slices.Contains(kernels.Levels(), s) {
				return "", fmt.Errorf("%q is not a kernel level of this machine (%s)", s, strings.Join(kernels.Levels(), ", "))
			}
			return s, nil
		}); err != nil {
			return options{}, err
		}
	}
	if o.rounds < 1 {
		return options{}, fmt.Errorf("-rounds %d: need at least 1 (5 or more for a median worth reading)", o.rounds)
	}
	return o, nil
}

// list splits a comma-separated flag value and parses each item, refusing
// an empty list and repeated items.
func list[T comparable](name, value string, parse func(string) (T, error)) ([]T, error) {
	var out []T
	for _, s := range strings.Split(value, ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			return nil, fmt.Errorf("%s %q: empty item", name, value)
		}
		v, err := parse(s)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if slices.Contains(out, v) {
			return nil, fmt.Errorf("%s %q: %s is listed twice", name, value, s)
		}
		out = append(out, v)
	}
	if len(out) == 0 {
		return nil, errors.New(name + ": empty list")
	}
	return out, nil
}
