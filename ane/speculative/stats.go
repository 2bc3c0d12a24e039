package speculative

// Stats counts what a Speculator did.
type Stats struct {
	Cycles     int `json:"cycles"`      // target calls with drafts
	PlainSteps int `json:"plain_steps"` // target calls without
	// Tokens produced by Step (a caller that stops early may drop some).
	Tokens int `json:"tokens"`
	// Histogram[k] counts cycles that accepted k drafts (k = 0..7).
	Histogram [MaxDrafts + 1]int `json:"accept_histogram"`
	Proposed  int                `json:"drafts_proposed"`
	Accepted  int                `json:"drafts_accepted"`
	// InvalidDrafts counts cycles whose drafts held an id outside the
	// vocabulary (treated as a rejection there).
	InvalidDrafts int `json:"invalid_drafts"`
	// ConstraintCuts counts cycles whose drafts the constraint cut short.
	ConstraintCuts int `json:"constraint_cuts,omitempty"`
	// AutoPauses counts the times auto mode paused drafting.
	AutoPauses int `json:"auto_pauses"`
}

func (s *Stats) record(k, proposed int) {
	s.Cycles++
	s.Histogram[k]++
	s.Accepted += k
	s.Proposed += proposed
	s.Tokens += k + 1
}

// TokensPerCycle is the mean number of tokens a speculative cycle yielded.
func (s Stats) TokensPerCycle() float64 {
	if s.Cycles == 0 {
		return 0
	}
	return float64(s.Accepted+s.Cycles) / float64(s.Cycles)
}

// AcceptRate is the share of the seven draft slots accepted per cycle, as
// the published server reports it.
func (s Stats) AcceptRate() float64 {
	if s.Cycles == 0 {
		return 0
	}
	return float64(s.Accepted) / float64(MaxDrafts*s.Cycles)
}
