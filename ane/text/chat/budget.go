package chat

import (
	"fmt"
	"strconv"
	"strings"
)

// ThinkStop is fed to the model when its reasoning reaches the thinking
// budget without </think>: it closes the reasoning in the model's own
// voice so the answer follows (the published server's THINK_STOP).
const ThinkStop = "\n\nConsidering the limited time by the user, I have to give the solution based on the thinking directly now.\n</think>\n\n"

// Effort is a named thinking budget level.
type Effort string

const (
	EffortLow    Effort = "low"
	EffortMedium Effort = "medium"
	EffortXHigh  Effort = "xhigh"
)

// Budgets maps effort levels to reasoning token budgets.
type Budgets map[Effort]int

// DefaultBudgets are the published server's --think-budget defaults.
var DefaultBudgets = Budgets{EffortLow: 2048, EffortMedium: 6144, EffortXHigh: 12288}

// ParseBudgets reads the --think-budget form "low=2048,medium=6144,xhigh=12288".
// Levels not mentioned keep their defaults.
func ParseBudgets(s string) (Budgets, error) {
	b := Budgets{}
	for k, v := range DefaultBudgets {
		b[k] = v
	}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		name, val, ok := strings.Cut(part, "=")
		if !ok {
			return nil, fmt.Errorf("think budget %q: want level=tokens", part)
		}
		e := Effort(strings.TrimSpace(name))
		if _, known := DefaultBudgets[e]; !known {
			return nil, fmt.Errorf("think budget %q: level must be low, medium or xhigh", part)
		}
		n, err := strconv.Atoi(strings.TrimSpace(val))
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("think budget %q: tokens must be a positive integer", part)
		}
		b[e] = n
	}
	return b, nil
}

// EffortFor maps an OpenAI-style reasoning_effort to a level: minimal and
// low → low, medium → medium, anything else (high, xhigh, unset) → xhigh.
func EffortFor(reasoningEffort string) Effort {
	switch strings.ToLower(strings.TrimSpace(reasoningEffort)) {
	case "minimal", "low":
		return EffortLow
	case "medium":
		return EffortMedium
	}
	return EffortXHigh
}

// ThinkingBudgetCap is the most reasoning a request of maxTokens may spend:
// max(maxTokens − 4096, maxTokens / 2), leaving room for the answer.
func ThinkingBudgetCap(maxTokens int) int {
	return max(maxTokens-4096, maxTokens/2)
}

// ThinkingBudget is the reasoning budget of one request: the request's own
// thinking_budget when it sets one (override > 0), else its effort level's
// budget; either way no more than ThinkingBudgetCap(maxTokens).
func (b Budgets) ThinkingBudget(maxTokens int, effort Effort, override int) int {
	budget := b[effort]
	if override > 0 {
		budget = override
	}
	return min(budget, ThinkingBudgetCap(maxTokens))
}

// ThinkingGuard follows one generation token by token and says when to
// force the reasoning closed. The generator calls Observe with each
// sampled token's text; when it returns a non-empty string, the generator
// keeps that token and then feeds the returned text's tokens.
type ThinkingGuard struct {
	limit    int
	used     int
	thinking bool
	finished bool   // </think> seen or forced: nothing more to do
	tail     string // end of recent text, to find markers split over tokens
}

// NewThinkingGuard guards a generation with the given budget (≤ 0: no
// limit). inThinking is true when the prompt already opened <think>
// (PromptOpensThinking); otherwise the guard starts counting when the
// model writes <think> itself.
func NewThinkingGuard(limit int, inThinking bool) *ThinkingGuard {
	return &ThinkingGuard{limit: limit, thinking: inThinking}
}

// Observe records one generated token and returns ThinkStop exactly once,
// at the token that uses up the budget inside unfinished reasoning.
func (g *ThinkingGuard) Observe(tokenText string) string {
	if g.finished {
		return ""
	}
	text := g.tail + tokenText
	g.tail = text[max(0, len(text)-len(ThinkClose)):]
	if !g.thinking {
		if strings.Contains(text, ThinkOpen) {
			g.thinking = true
			g.tail = text[strings.LastIndex(text, ThinkOpen)+len(ThinkOpen):]
		}
		return ""
	}
	if strings.Contains(text, ThinkClose) {
		g.finished = true
		return ""
	}
	g.used++
	if g.limit > 0 && g.used >= g.limit {
		g.finished = true
		return ThinkStop
	}
	return ""
}

// Used is the number of reasoning tokens counted so far.
func (g *ThinkingGuard) Used() int { return g.used }
