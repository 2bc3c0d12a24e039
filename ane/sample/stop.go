package sample

import (
	"slices"
	"strings"
)

// FinishReason says why generation ended; empty while it goes on.
type FinishReason string

const (
	// FinishStop: a stop token or stop string was produced.
	FinishStop FinishReason = "stop"
	// FinishLength: MaxTokens were produced.
	FinishLength FinishReason = "length"
	// FinishLoop: the loop guard saw the output tail repeating.
	FinishLoop FinishReason = "loop"
)

// Loop guard geometry (Anemll/anemll-forge scripts/qwen38_server.py): periods
// 4..256 tokens, checked when the output reaches 64 tokens and every 32 tokens
// after.
const (
	loopMinPeriod  = 4
	loopMaxPeriod  = 256
	loopFirstCheck = 64
	loopEvery      = 32
)

// Stopper decides, token by token, what text to show and when to stop:
// stop tokens, stop strings matched across token boundaries on the decoded
// text, max tokens and the loop guard. One Stopper serves one generation.
type Stopper struct {
	stopTokens map[int]bool
	maxTokens  int
	loopGuard  int

	out    []int
	text   StopStrings // decoded text not yet emitted (may start a stop string)
	done   FinishReason
	period int
}

// NewStopper returns a Stopper for opts (which must be valid).
func NewStopper(opts Options) (*Stopper, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	o := opts.withDefaults()
	s := &Stopper{stopTokens: map[int]bool{}, maxTokens: o.MaxTokens, loopGuard: o.LoopGuard}
	s.text.stops = slices.Clone(o.StopStrings)
	for _, t := range o.StopTokens {
		s.stopTokens[t] = true
	}
	return s, nil
}

// IsStopToken reports whether id ends generation.
func (s *Stopper) IsStopToken(id int) bool { return s.stopTokens[id] }

// Add takes the next generated token and the text it completed (from a
// streaming detokenizer) and returns the text now safe to show and, when
// generation must end, why. After a non-empty reason, Add does nothing.
// A stop token is not part of the output and its text is not shown; text
// ending in a stop string is shown up to the stop string.
func (s *Stopper) Add(id int, text string) (emit string, finish FinishReason) {
	if s.done != "" {
		return "", s.done
	}
	if s.stopTokens[id] {
		s.done = FinishStop
		return s.text.Flush(), s.done
	}
	s.out = append(s.out, id)
	emit, hit := s.text.Add(text)
	if hit {
		s.done = FinishStop
		return emit, s.done
	}
	n := len(s.out)
	switch {
	case n >= s.maxTokens:
		s.done = FinishLength
	case s.loopGuard > 0 && n >= loopFirstCheck && (n-loopFirstCheck)%loopEvery == 0:
		if p := LoopPeriod(s.out, s.loopGuard); p > 0 {
			s.done, s.period = FinishLoop, p
		}
	}
	if s.done != "" {
		return emit + s.text.Flush(), s.done
	}
	return emit, ""
}

// Flush returns the text still held back (a possible stop-string start)
// once no more tokens will come.
func (s *Stopper) Flush() string { return s.text.Flush() }

// Tokens is the output so far (stop tokens excluded); valid until the next Add.
func (s *Stopper) Tokens() []int { return s.out }

// Finish is the reason generation ended, or "" while it goes on.
func (s *Stopper) Finish() FinishReason { return s.done }

// LoopPeriod is the period the loop guard detected (0 if it did not fire).
func (s *Stopper) LoopPeriod() int { return s.period }

// StopStrings finds stop strings in text that arrives in pieces (token by
// token, or a step's tokens at once): it holds back a suffix that could
// begin a stop string until the next piece decides it, and cuts the text at
// the first stop string. The Stopper uses it, and so does the daemon for a
// request's stop strings.
type StopStrings struct {
	stops   []string
	pending strings.Builder // text not yet emitted (may start a stop string)
}

// NewStopStrings matches stops (none empty).
func NewStopStrings(stops []string) *StopStrings {
	return &StopStrings{stops: slices.Clone(stops)}
}

// Add takes the next piece of text and returns what may be shown now; hit
// reports a stop string: the text before it is returned and the rest
// dropped.
func (m *StopStrings) Add(text string) (emit string, hit bool) {
	m.pending.WriteString(text)
	if at := m.firstStopString(); at >= 0 {
		emit = m.take(at)
		m.pending.Reset()
		return emit, true
	}
	return m.take(m.pending.Len() - m.heldBack()), false
}

// Flush returns the text still held back, once no more will come.
func (m *StopStrings) Flush() string { return m.take(m.pending.Len()) }

// take removes and returns the first n bytes of the pending text.
func (m *StopStrings) take(n int) string {
	all := m.pending.String()
	m.pending.Reset()
	m.pending.WriteString(all[n:])
	return all[:n]
}

// firstStopString is the byte offset in the pending text of the earliest
// stop string, or -1. Held-back text guarantees any occurrence starts there.
func (m *StopStrings) firstStopString() int {
	text, at := m.pending.String(), -1
	for _, stop := range m.stops {
		if i := strings.Index(text, stop); i >= 0 && (at < 0 || i < at) {
			at = i
		}
	}
	return at
}

// heldBack is the length of the longest pending suffix that begins some
// stop string: it may complete with the next piece, so it is not shown yet.
func (m *StopStrings) heldBack() int {
	text, hold := m.pending.String(), 0
	for _, stop := range m.stops {
		for n := min(len(stop)-1, len(text)); n > hold; n-- {
			if strings.HasSuffix(text, stop[:n]) {
				hold = n
				break
			}
		}
	}
	return hold
}

// LoopPeriod returns the smallest period P in 4..256 such that the last
// reps·P tokens of out are reps copies of one P-token block, or 0.
func LoopPeriod(out []int, reps int) int {
	if reps <= 0 {
		return 0
	}
	for p := loopMinPeriod; p <= loopMaxPeriod && p*reps <= len(out); p++ {
		tail := out[len(out)-p*reps:]
		if slices.Equal(tail[p:], tail[:len(tail)-p]) {
			return p
		}
	}
	return 0
}
