package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/forgedaemon/forged/client/wire"
)

// ANSI dim and reset: reasoning on a terminal.
const (
	ansiDim   = "\x1b[2m"
	ansiReset = "\x1b[0m"
)

// reasoningPrefix starts each reasoning line when stdout is not a terminal.
const reasoningPrefix = "thinking: "

// chatView writes a chat's parsed stream for a person: the reasoning dimmed
// (or each line prefixed where there are no colours) or hidden, the answer
// as it comes, each tool call as indented JSON, and what did not parse on
// stderr.
type chatView struct {
	hideReasoning bool
	dim           bool // stdout is a terminal

	last      string // "reasoning", "content" or "call": what was written last
	lineStart bool   // the output is at the start of a line
}

func newChatView(hideReasoning, dim bool) *chatView {
	return &chatView{hideReasoning: hideReasoning, dim: dim, lineStart: true}
}

func (v *chatView) write(out, errOut io.Writer, ev wire.TokenEvent) error {
	var b strings.Builder
	if ev.Reasoning != "" && !v.hideReasoning {
		v.reasoning(&b, ev.Reasoning)
	}
	if ev.Content != "" {
		if v.last == "reasoning" || v.last == "call" {
			v.newline(&b)
			if v.last == "reasoning" {
				b.WriteString("\n")
			}
		}
		v.text(&b, ev.Content)
		v.last = "content"
	}
	for _, c := range ev.ToolCalls {
		if v.last != "" {
			v.newline(&b)
		}
		j, err := json.MarshalIndent(c, "", "  ")
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "[tool call]\n%s\n", j)
		v.last, v.lineStart = "call", true
	}
	if _, err := io.WriteString(out, b.String()); err != nil {
		return err
	}
	for _, d := range ev.Diagnostics {
		fmt.Fprintf(errOut, "forgectl: the model's output: %s: %s\n", d.Kind, d.Message)
	}
	return nil
}

func (v *chatView) reasoning(b *strings.Builder, s string) {
	v.last = "reasoning"
	if v.dim {
		b.WriteString(ansiDim + s + ansiReset)
		v.lineStart = strings.HasSuffix(s, "\n")
		return
	}
	for line := range strings.SplitAfterSeq(s, "\n") {
		if line == "" {
			continue
		}
		if v.lineStart {
			b.WriteString(reasoningPrefix)
		}
		b.WriteString(line)
		v.lineStart = strings.HasSuffix(line, "\n")
	}
}

func (v *chatView) text(b *strings.Builder, s string) {
	b.WriteString(s)
	v.lineStart = strings.HasSuffix(s, "\n")
}

// newline ends the current line, if one is open.
func (v *chatView) newline(b *strings.Builder) {
	if !v.lineStart {
		b.WriteString("\n")
		v.lineStart = true
	}
}
