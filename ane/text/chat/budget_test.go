package chat

import (
	"strings"
	"testing"
)

func TestThinkingBudgetCapAndEffort(t *testing.T) {
	for _, c := range []struct {
		maxTokens int
		effort    string
		override  int
		want      int
	}{
		{4096, "high", 0, 2048},     // cap max(0, 2048) = 2048 < 12288
		{32768, "", 0, 12288},       // cap 28672: xhigh fits
		{32768, "minimal", 0, 2048}, // minimal → low
		{32768, "LOW", 0, 2048},
		{32768, "medium", 0, 6144},
		{10000, "xhigh", 0, 5904},   // cap max(5904, 5000)
		{10000, "low", 9000, 5904},  // an override is capped too
		{100000, "low", 9000, 9000}, // and replaces the level's budget
		{0, "low", 0, 0},
	} {
		got := DefaultBudgets.ThinkingBudget(c.maxTokens, EffortFor(c.effort), c.override)
		if got != c.want {
			t.Errorf("max_tokens=%d effort=%q override=%d: got %d want %d", c.maxTokens, c.effort, c.override, got, c.want)
		}
	}
}

func TestParseBudgets(t *testing.T) {
	b, err := ParseBudgets("low=100, xhigh=300")
	if err != nil || b[EffortLow] != 100 || b[EffortMedium] != 6144 || b[EffortXHigh] != 300 {
		t.Fatalf("got %v, %v", b, err)
	}
	for _, bad := range []string{"low", "huge=5", "low=0", "low=x"} {
		if _, err := ParseBudgets(bad); err == nil || !strings.Contains(err.Error(), "think budget") {
			t.Errorf("%q: %v", bad, err)
		}
	}
	if DefaultBudgets[EffortLow] != 2048 {
		t.Fatal("ParseBudgets changed the defaults")
	}
}

func TestThinkingGuardForcesOnceAtBudget(t *testing.T) {
	g := NewThinkingGuard(3, true)
	for i, tok := range []string{"a", "b"} {
		if s := g.Observe(tok); s != "" {
			t.Fatalf("forced after %d tokens", i+1)
		}
	}
	if s := g.Observe("c"); s != ThinkStop {
		t.Fatalf("third token: got %q", s)
	}
	if s := g.Observe("d"); s != "" || g.Used() != 3 {
		t.Fatalf("forced twice or kept counting: %q %d", s, g.Used())
	}
	if !strings.HasSuffix(ThinkStop, "</think>\n\n") || !strings.HasPrefix(ThinkStop, "\n\nConsidering the limited time") {
		t.Fatal("ThinkStop text")
	}
}

func TestThinkingGuardStopsCountingAtClose(t *testing.T) {
	g := NewThinkingGuard(4, false)
	seq := []string{"Hi", "<think>", "x", "y", "</th", "ink>", "answer", "more", "text"}
	for _, tok := range seq {
		if s := g.Observe(tok); s != "" {
			t.Fatalf("forced at %q although reasoning closed within budget", tok)
		}
	}
	if g.Used() != 3 { // x, y, "</th" counted before the marker completed
		t.Fatalf("used %d", g.Used())
	}
	// Answer tokens before any <think> are never counted.
	g = NewThinkingGuard(1, false)
	for _, tok := range []string{"no", "thinking", "here"} {
		if g.Observe(tok) != "" {
			t.Fatal("forced outside reasoning")
		}
	}
}
