package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/forgedaemon/forged/client"
	"github.com/forgedaemon/forged/client/wire"
	"github.com/forgedaemon/forged/internal/cli"
	"github.com/spf13/cobra"
)

// genOptions are the flags chat and generate share.
type genOptions struct {
	maxTokens     uint64
	temperature   float64
	topP          float64
	topK          uint64
	seed          uint64
	noSpeculative bool
	stop          []string
	background    bool
	showUsage     bool
}

func addGenFlags(c *cobra.Command) *genOptions {
	o := &genOptions{}
	f := c.Flags()
	f.Uint64Var(&o.maxTokens, "max-tokens", 512, "stop after this many generated tokens")
	f.Float64Var(&o.temperature, "temperature", 0, "sampling temperature (0: greedy)")
	f.Float64Var(&o.topP, "top-p", 0, "nucleus sampling threshold (0: off)")
	f.Uint64Var(&o.topK, "top-k", 0, "sample among the k most likely tokens (0: default)")
	f.Uint64Var(&o.seed, "seed", 0, "sampling seed")
	f.BoolVar(&o.noSpeculative, "no-speculative", false, "decode without the DFlash2 drafter")
	f.StringArrayVar(&o.stop, "stop", nil, "stop when this text is generated (repeatable)")
	f.BoolVar(&o.background, "background", false, "queue at background priority")
	f.BoolVar(&o.showUsage, "usage", false, "print usage (tokens, TTFT, tokens/s) to stderr after the text")
	return o
}

// options are the client options the flags ask for (greedy unless a
// sampling flag is given).
func (o *genOptions) options() []client.GenOption {
	opts := []client.GenOption{client.MaxTokens(o.maxTokens), client.Speculative(!o.noSpeculative)}
	if o.temperature != 0 || o.topP != 0 || o.topK != 0 || o.seed != 0 {
		opts = append(opts, client.Sampling(wire.Sampling{Temperature: o.temperature, TopP: o.topP, TopK: o.topK, Seed: o.seed}))
	}
	return opts
}

func (o *genOptions) priority() string {
	if o.background {
		return wire.PriorityBackground
	}
	return wire.PriorityInteractive
}

// queueNote shows where a request waits in the daemon's queue until its
// first token: on a terminal one line rewritten in place, "queued
// (position 2)…", cleared when the answer starts; elsewhere a line per
// place; with --json a {"event":"queued"} line on out.
type queueNote struct {
	out, errOut io.Writer
	tty, asJSON bool
	shown       bool // a terminal line is showing
	err         error
}

func newQueueNote(out, errOut io.Writer, asJSON bool) *queueNote {
	return &queueNote{out: out, errOut: errOut, tty: cli.WriterIsTerminal(errOut), asJSON: asJSON}
}

// option is the client option that feeds the note.
func (q *queueNote) option() client.GenOption { return client.OnQueued(q.queued) }

func (q *queueNote) queued(ev wire.QueuedEvent) {
	switch {
	case q.asJSON:
		q.err = cli.WriteJSONLine(q.out, struct {
			Event string `json:"event"`
			wire.QueuedEvent
		}{wire.EventQueued, ev})
	case q.tty:
		fmt.Fprintf(q.errOut, "\r\x1b[Kqueued (position %d)…", ev.Position)
		q.shown = true
	default:
		fmt.Fprintf(q.errOut, "queued (position %d)…\n", ev.Position)
	}
}

// clear removes the terminal line, once the answer starts or ends.
func (q *queueNote) clear() {
	if q.shown {
		fmt.Fprint(q.errOut, "\r\x1b[K")
		q.shown = false
	}
}

// printStream writes a generation as it streams: text as it arrives (a
// chat through view: reasoning, answer and tool calls apart), or one JSON
// line per token event and a final {"event":"done"} line with the reply.
// q (from the same call's OnQueued) is cleared at the first token.
func printStream(s *client.Stream, q *queueNote, out, errOut io.Writer, asJSON, showUsage bool, view *chatView) (*wire.GenerationResult, error) {
	defer q.clear()
	for ev, err := range s.Tokens() {
		if err != nil {
			return nil, err
		}
		if q.clear(); q.err != nil {
			return nil, q.err
		}
		if asJSON {
			if err := cli.WriteJSONLine(out, struct {
				Event string `json:"event"`
				wire.TokenEvent
			}{wire.EventToken, ev}); err != nil {
				return nil, err
			}
		} else if view != nil {
			if err := view.write(out, errOut, ev); err != nil {
				return nil, err
			}
		} else if _, err := io.WriteString(out, ev.Text); err != nil {
			return nil, err
		}
	}
	res, err := s.Result()
	if err != nil {
		return nil, err
	}
	if asJSON {
		return res, cli.WriteJSONLine(out, struct {
			Event  string                 `json:"event"`
			Result *wire.GenerationResult `json:"result"`
		}{"done", res})
	}
	fmt.Fprintln(out)
	if showUsage {
		u := res.Usage
		fmt.Fprintf(errOut, "[%s: %d prompt (%d cached) + %d generated tokens, TTFT %.1f ms, %.1f tokens/s, context %d, revision %s]\n",
			res.FinishReason, u.PromptTokens, u.CachedTokens, u.GeneratedTokens, u.TTFTMS, u.TokensPerS, res.Context, res.Revision)
	}
	return res, nil
}

func newGenerateCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "generate [PROMPT]",
		Short: "Complete a raw prompt (no chat template), streaming the text",
		Long: `Complete a raw prompt with the served model, streaming the text as it is generated.
Give the prompt as arguments, or token ids with --ids 1,2,3.`,
	}
	asJSON := cli.JSONFlag(c)
	socket := cli.SocketFlag(c)
	opts := addGenFlags(c)
	idList := c.Flags().String("ids", "", "comma-separated prompt token ids instead of a text prompt")
	c.RunE = func(cmd *cobra.Command, args []string) error {
		req := wire.GenerateArgs{Stop: opts.stop, Priority: opts.priority()}
		gen := opts.options()
		switch {
		case *idList != "" && len(args) > 0:
			return fmt.Errorf("give either a prompt or --ids, not both")
		case *idList != "":
			ids, err := parseIDs(*idList)
			if err != nil {
				return err
			}
			req.IDs = ids
		case len(args) > 0:
			gen = append(gen, client.Prompt(strings.Join(args, " ")))
		default:
			return fmt.Errorf("no prompt: give it as arguments or --ids")
		}
		cl, err := cli.Dial(cmd.Context(), *socket)
		if err != nil {
			return err
		}
		defer cl.Close()
		q := newQueueNote(cmd.OutOrStdout(), cmd.ErrOrStderr(), *asJSON)
		_, err = printStream(cl.Generate(cmd.Context(), req, append(gen, q.option())...), q, cmd.OutOrStdout(), cmd.ErrOrStderr(), *asJSON, opts.showUsage, nil)
		return err
	}
	return c
}

func parseIDs(s string) ([]uint32, error) {
	var ids []uint32
	for i, f := range strings.Split(s, ",") {
		n, err := strconv.ParseUint(strings.TrimSpace(f), 10, 32)
		if err != nil {
			return nil, fmt.Errorf("--ids: item %d (%q) is not a token id", i+1, f)
		}
		ids = append(ids, uint32(n))
	}
	return ids, nil
}
