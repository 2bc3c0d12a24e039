// Package sample turns a row of logits into the next token the way the
// published ANEMLL Forge server does (Anemll/anemll-forge
// scripts/qwen38_server.py): top-k, presence penalty, optional DRY,
// temperature, top-p, a seeded PRNG; and decides when generation ends (stop
// tokens, stop strings, max tokens, the loop guard).
//
// Plain and speculative decoding both sample from Sampler.Dist, so the
// speculative cycle (package ane/speculative) can keep the target's distribution.
package sample

import (
	"errors"
	"fmt"
	"math"
)

// Defaults from the published server (scripts/qwen38_server.py).
const (
	DefaultTopK      = 20
	DefaultMaxTokens = 4096
	DefaultLoopGuard = 6

	DefaultDRYBase     = 1.75
	DefaultDRYAllowed  = 8
	DefaultDRYWindow   = 4096
	DefaultDRYMaxMatch = 32
	// dryMaxExponent bounds the DRY exponent: penalty = mult·base^min(match−allowed, 24).
	dryMaxExponent = 24
)

// Options configures one generation's sampling and stopping.
type Options struct {
	// Temperature ≤ 0 selects greedy decoding: the argmax of the raw logits,
	// with no penalties, exactly as the published server.
	Temperature float64
	// TopK keeps the K highest logits before anything else; 0 means 20.
	TopK int
	// TopP keeps the smallest most-probable prefix whose cumulative
	// probability reaches TopP (the token that crosses it included). 1 (or 0)
	// keeps all.
	TopP float64
	// PresencePenalty is subtracted from the logit of every candidate that
	// already appears in the output.
	PresencePenalty float64
	// DRY is the optional "don't repeat yourself" penalty; off when
	// DRY.Multiplier is 0.
	DRY DRY
	// Seed makes a sampled run reproducible (PCG from math/rand/v2).
	Seed uint64

	// StopTokens end generation when produced; they are not part of the output.
	StopTokens []int
	// StopStrings end generation when the decoded text contains one; the
	// text before it is emitted, the stop string is not.
	StopStrings []string
	// MaxTokens bounds the output length; 0 means DefaultMaxTokens.
	MaxTokens int
	// LoopGuard stops generation when the output tail repeats this many times
	// with the same period (4..256 tokens), checked every 32 tokens; 0 is off.
	LoopGuard int
}

// DRY is the sequence-repetition penalty: a candidate that would extend a
// verbatim repeat of length match ≥ AllowedLength loses
// Multiplier·Base^min(match−AllowedLength, 24) from its logit.
type DRY struct {
	Multiplier    float64
	Base          float64 // 0 means 1.75
	AllowedLength int     // 0 means 8
	// Breakers are token ids a repeat never spans (the published server
	// uses every token containing a newline, ':', '"' or '*').
	Breakers []int
	Window   int // tokens of output searched; 0 means 4096
	MaxMatch int // longest repeat measured; 0 means 32
}

// Defaults returns the published server's defaults for thinking or
// non-thinking mode: temperature 1.0 / top-p 0.95 with thinking, 0.7 / 0.8
// without; top-k 20, presence 0, DRY off, 4096 max tokens, loop guard 6.
func Defaults(thinking bool) Options {
	o := Options{Temperature: 0.7, TopK: DefaultTopK, TopP: 0.8, MaxTokens: DefaultMaxTokens, LoopGuard: DefaultLoopGuard}
	if thinking {
		o.Temperature, o.TopP = 1.0, 0.95
	}
	return o
}

// Validate reports the first option that breaks a rule, by name.
func (o Options) Validate() error {
	finite := func(name string, v float64) error {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("sampling option %s: %v is not a finite number", name, v)
		}
		return nil
	}
	for _, c := range []struct {
		name string
		v    float64
	}{{"temperature", o.Temperature}, {"top_p", o.TopP}, {"presence_penalty", o.PresencePenalty},
		{"dry.multiplier", o.DRY.Multiplier}, {"dry.base", o.DRY.Base}} {
		if err := finite(c.name, c.v); err != nil {
			return err
		}
	}
	switch {
	case o.TopK < 0:
		return fmt.Errorf("sampling option top_k: %d is negative (0 means %d)", o.TopK, DefaultTopK)
	case o.TopP < 0 || o.TopP > 1:
		return fmt.Errorf("sampling option top_p: %v is outside [0, 1] (0 means 1)", o.TopP)
	case o.MaxTokens < 0:
		return fmt.Errorf("sampling option max_tokens: %d is negative (0 means %d)", o.MaxTokens, DefaultMaxTokens)
	case o.LoopGuard < 0:
		return fmt.Errorf("sampling option loop_guard: %d is negative (0 turns it off)", o.LoopGuard)
	case o.LoopGuard == 1:
		return errors.New("sampling option loop_guard: 1 would stop on any output; use 0 (off) or at least 2 repeats")
	case o.DRY.Multiplier < 0:
		return fmt.Errorf("sampling option dry.multiplier: %v is negative (0 turns DRY off)", o.DRY.Multiplier)
	case o.DRY.Base != 0 && o.DRY.Base < 1:
		return fmt.Errorf("sampling option dry.base: %v is below 1 (the penalty must grow with the repeat)", o.DRY.Base)
	case o.DRY.AllowedLength < 0:
		return fmt.Errorf("sampling option dry.allowed_length: %d is negative", o.DRY.AllowedLength)
	case o.DRY.Window < 0:
		return fmt.Errorf("sampling option dry.window: %d is negative", o.DRY.Window)
	case o.DRY.MaxMatch < 0:
		return fmt.Errorf("sampling option dry.max_match: %d is negative", o.DRY.MaxMatch)
	}
	for i, t := range o.DRY.Breakers {
		if t < 0 {
			return fmt.Errorf("sampling option dry.breakers[%d]: token id %d is negative", i, t)
		}
	}
	for i, t := range o.StopTokens {
		if t < 0 {
			return fmt.Errorf("sampling option stop_tokens[%d]: token id %d is negative", i, t)
		}
	}
	for i, s := range o.StopStrings {
		if s == "" {
			return fmt.Errorf("sampling option stop[%d]: empty stop string", i)
		}
	}
	return nil
}

// withDefaults resolves the zero values that mean "default".
func (o Options) withDefaults() Options {
	if o.TopK == 0 {
		o.TopK = DefaultTopK
	}
	if o.TopP == 0 {
		o.TopP = 1
	}
	if o.MaxTokens == 0 {
		o.MaxTokens = DefaultMaxTokens
	}
	d := &o.DRY
	if d.Base == 0 {
		d.Base = DefaultDRYBase
	}
	if d.AllowedLength == 0 {
		d.AllowedLength = DefaultDRYAllowed
	}
	if d.Window == 0 {
		d.Window = DefaultDRYWindow
	}
	if d.MaxMatch == 0 {
		d.MaxMatch = DefaultDRYMaxMatch
	}
	return o
}
