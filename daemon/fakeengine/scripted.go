package fakeengine

import (
	"context"
	"sync"

	"github.com/forgedaemon/forged/client/wire"
	"github.com/forgedaemon/forged/daemon"
)

// Scripted is a backend whose model writes a script: each generation's
// output is the next text given to Script, tokenized by the real tokenizer
// and followed by the end-of-turn token, so everything after the engine
// (detokenizing, stop strings, the chat output parser, the wire) runs for
// real on known model text. Text is the real text side: a
// modelbackend.Backend opened with TokenizerOnly (tokenizer, chat template,
// stream decoder); Scripted replaces its generation.
type Scripted struct {
	daemon.Backend
	// Step is how many tokens one engine call yields (a speculative cycle
	// yields up to 8); 0 means 1.
	Step int
	// EndOfTurn is appended to each script, as the model samples it (ids
	// of the end token, e.g. the tokenization of "<|im_end|>").
	EndOfTurn []int

	mu      sync.Mutex
	scripts []string
	prompts []string
}

// Script queues the outputs of the next generations, one per generation.
func (s *Scripted) Script(texts ...string) {
	s.mu.Lock()
	s.scripts = append(s.scripts, texts...)
	s.mu.Unlock()
}

// Prompts are the chat prompts rendered so far.
func (s *Scripted) Prompts() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.prompts...)
}

// Model implements daemon.Backend: Text's bundle with one 8192-row context.
func (s *Scripted) Model() daemon.ModelInfo {
	m := s.Backend.Model()
	m.ContextEntries = []int{8192}
	return m
}

// RenderChat implements daemon.Backend with Text's template, recording the prompt.
func (s *Scripted) RenderChat(p daemon.ChatPrompt) (string, error) {
	out, err := s.Backend.RenderChat(p)
	s.mu.Lock()
	s.prompts = append(s.prompts, out)
	s.mu.Unlock()
	return out, err
}

// Generate implements daemon.Backend: it emits the next script's tokens,
// Step at a time, then EndOfTurn (finish "stop"), or stops at MaxTokens
// (finish "length"). Without a script left it fails.
func (s *Scripted) Generate(ctx context.Context, req daemon.GenerateRequest, emit func([]int) error) (daemon.Outcome, error) {
	out := daemon.Outcome{FinishReason: wire.FinishLength, ContextEntry: 8192, Revision: s.Backend.Model().Bundle.Revision}
	if req.Constraint != nil { // it cannot mask its canned text
		return out, errNoConstraint
	}
	s.mu.Lock()
	if len(s.scripts) == 0 {
		s.mu.Unlock()
		return out, wire.Errorf(wire.CodeInternal, "fakeengine: no script left for this generation")
	}
	text := s.scripts[0]
	s.scripts = s.scripts[1:]
	s.mu.Unlock()
	ids, err := s.Tokenize(text)
	if err != nil {
		return out, err
	}
	ids = append(ids, s.EndOfTurn...)
	step := max(s.Step, 1)
	for done := 0; done < len(ids) && done < req.MaxTokens; {
		if err := ctx.Err(); err != nil {
			return out, err
		}
		n := min(step, len(ids)-done, req.MaxTokens-done)
		if err := emit(ids[done : done+n]); err != nil {
			return out, err
		}
		done += n
		if done == len(ids) {
			out.FinishReason = wire.FinishStop
		}
	}
	return out, nil
}
