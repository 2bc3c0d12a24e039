package residency

import (
	"fmt"

	"github.com/forgedaemon/forged/internal/units"
)

// Budget is the memory the daemon may use: the machine's memory (or the
// cgroup limit when smaller) minus a reserve left to the system and apps.
func Budget(machine, reserve uint64) (int64, error) {
	if reserve >= machine {
		return 0, fmt.Errorf("memory reserve %d bytes leaves nothing of the machine's %d bytes", reserve, machine)
	}
	return int64(machine - reserve), nil
}

// ContextExceededError is a request that no ladder entry can hold.
type ContextExceededError struct {
	Need, Limit int // positions needed; rows of the largest entry
}

func (e *ContextExceededError) Error() string {
	return fmt.Sprintf("%d positions (prompt + max_tokens + %d) exceed the largest context entry (%d rows)", e.Need, SpeculativeReserve, e.Limit)
}

// SpeculativeReserve is the positions kept free past prompt + max_tokens for
// one verify block (speculative requests reserve 8: Anemll/anemll-forge
// scripts/qwen38_server.py, docs/SPECULATIVE_DECODING.md).
const SpeculativeReserve = 8

// Entry is the smallest ladder entry whose KV capacity holds need positions.
func (f *Footprint) Entry(need int) (int, error) {
	for _, c := range f.Ladder {
		if f.Rows(c) >= need {
			return c, nil
		}
	}
	largest := f.Ladder[len(f.Ladder)-1]
	return 0, &ContextExceededError{Need: need, Limit: f.Rows(largest)}
}

// EntryFor is the entry a request of prompt tokens and maxTokens starts at.
func (f *Footprint) EntryFor(prompt, maxTokens int) (int, error) {
	return f.Entry(prompt + maxTokens + SpeculativeReserve)
}

// Occupancy is what is in memory when a request asks to be admitted.
type Occupancy struct {
	Models   int   // loaded model copies (2 while an update switch waits for streams on the old revision)
	Drafter  bool  // the drafter is loaded
	Sessions []int // the context entries of sessions holding state
}

// Used is the memory r holds.
func (f *Footprint) Used(r Occupancy) int64 {
	var n int64
	for range r.Models {
		n += f.Model(false)
	}
	if r.Drafter {
		n += f.Drafter
	}
	for _, c := range r.Sessions {
		n += f.Session(c)
	}
	return n
}

// Verdict is what happens to a request.
type Verdict int

const (
	Admit Verdict = iota // it fits now
	Wait                 // it fits once other sessions free their memory
	Never                // it does not fit even with nothing else resident
)

func (v Verdict) String() string {
	switch v {
	case Admit:
		return "admit"
	case Wait:
		return "wait"
	case Never:
		return "never"
	}
	return fmt.Sprintf("verdict(%d)", int(v))
}

// Request is a session asking for memory.
type Request struct {
	Prompt, MaxTokens int
	Drafter           bool // wants speculative decoding with the drafter
}

// Decision is the outcome of admission, with the numbers behind it.
type Decision struct {
	Verdict Verdict
	Entry   int   // the context entry the session starts at
	Need    int64 // bytes the request adds to what is resident
	Used    int64 // bytes resident before it
	Budget  int64
	Reason  string
}

// Decide admits req against budget given what is resident. A request whose
// context no entry holds is an error (*ContextExceededError), never a
// truncation. A request that would fit alone waits; one that would not fit
// even alone is Never, so the caller can refuse it at once instead of
// queueing it forever.
func (f *Footprint) Decide(budget int64, r Occupancy, req Request) (Decision, error) {
	entry, err := f.EntryFor(req.Prompt, req.MaxTokens)
	if err != nil {
		return Decision{}, err
	}
	d := Decision{Entry: entry, Used: f.Used(r), Budget: budget}
	d.Need = f.Session(entry)
	if r.Models == 0 {
		d.Need += f.Model(false)
	}
	if req.Drafter && !r.Drafter {
		d.Need += f.Drafter
	}
	alone := f.Model(req.Drafter) + f.Session(entry)
	switch {
	case d.Used+d.Need <= budget:
		d.Verdict = Admit
		d.Reason = fmt.Sprintf("%s resident + %s for a %s session fit in %s", units.Bytes(d.Used), units.Bytes(d.Need), entryName(entry), units.Bytes(budget))
	case alone <= budget:
		d.Verdict = Wait
		d.Reason = fmt.Sprintf("%s resident + %s for a %s session exceed %s; it fits once others free memory", units.Bytes(d.Used), units.Bytes(d.Need), entryName(entry), units.Bytes(budget))
	default:
		d.Verdict = Never
		d.Reason = fmt.Sprintf("a %s session needs %s with the model alone, more than the budget of %s", entryName(entry), units.Bytes(alone), units.Bytes(budget))
	}
	return d, nil
}

func entryName(ctx int) string {
	if ctx%1024 == 0 {
		return fmt.Sprintf("%dK", ctx/1024)
	}
	return fmt.Sprint(ctx)
}
