package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"

	"github.com/forgedaemon/forged/client"
	"github.com/forgedaemon/forged/client/wire"
	"github.com/forgedaemon/forged/internal/cli"
	"github.com/spf13/cobra"
	"golang.org/x/term"
)

func newChatCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "chat [MESSAGE]",
		Short: "Chat with the served model: one message, or an interactive session",
		Long: `With a message (as arguments, or on stdin when it is not a terminal), send it as one
user turn and stream the answer. Without one on a terminal, start an interactive
conversation: the daemon keeps its history in a session, so each turn only prefills
the new text. /help lists the commands (/reset, /system TEXT, /exit); Ctrl-C clears
the line or stops the answer, and at an empty prompt, pressed twice, leaves, as
Ctrl-D does. An error (context_exceeded, busy) is shown and the conversation goes
on: /reset starts a new one.`,
	}
	asJSON := cli.JSONFlag(c)
	socket := cli.SocketFlag(c)
	opts := addGenFlags(c)
	system := c.Flags().String("system", "", "system prompt")
	thinking := c.Flags().String("thinking", "on", "reasoning before the answer: on or off")
	budget := c.Flags().Uint64("thinking-budget", 0, "at most this many reasoning tokens (0: no limit)")
	toolsFile := c.Flags().String("tools", "", "a JSON file with an array of tool schemas the model may call (key order is kept)")
	format := c.Flags().String("format", "", `the answer must be JSON: "json" (any value), @FILE.json or an inline JSON Schema (the daemon masks every token so it parses and validates)`)
	toolChoice := c.Flags().String("tool-choice", "", "auto, none, required (one call of one of --tools) or a tool's NAME (one call of it)")
	hideReasoning := c.Flags().Bool("hide-reasoning", false, "do not show the model's reasoning (it is shown dimmed on a terminal, else each line prefixed \"thinking: \")")
	c.RunE = func(cmd *cobra.Command, args []string) error {
		if *thinking != "on" && *thinking != "off" {
			return fmt.Errorf("--thinking must be on or off, got %q", *thinking)
		}
		base := wire.ChatArgs{Stop: opts.stop, Priority: opts.priority(), Thinking: *thinking, ThinkingBudget: *budget}
		if *toolsFile != "" {
			data, err := os.ReadFile(*toolsFile)
			if err != nil {
				return fmt.Errorf("--tools: %w", err)
			}
			if base.Tools, err = wire.ObjectsFromJSON(data); err != nil {
				return fmt.Errorf("--tools %s: %w", *toolsFile, err)
			}
		}
		var err error
		if base.Format, err = parseFormat(*format); err != nil {
			return err
		}
		base.ToolChoice = parseToolChoice(*toolChoice)
		var first []wire.Message
		if *system != "" {
			first = append(first, wire.Message{Role: "system", Content: *system})
		}
		message := strings.Join(args, " ")
		interactive := message == "" && cli.IsTerminal(cmd.InOrStdin())
		if message == "" && !interactive {
			data, err := io.ReadAll(cmd.InOrStdin())
			if err != nil {
				return err
			}
			if message = strings.TrimSpace(string(data)); message == "" {
				return fmt.Errorf("no message: give it as arguments or on stdin")
			}
		}
		cl, err := cli.Dial(cmd.Context(), *socket)
		if err != nil {
			return err
		}
		defer cl.Close()
		dim := cli.WriterIsTerminal(cmd.OutOrStdout())
		if !interactive {
			req := base
			req.Messages = append(first, wire.Message{Role: "user", Content: message})
			q := newQueueNote(cmd.OutOrStdout(), cmd.ErrOrStderr(), *asJSON)
			_, err := printStream(cl.Chat(cmd.Context(), req, append(opts.options(), q.option())...), q, cmd.OutOrStdout(), cmd.ErrOrStderr(), *asJSON, opts.showUsage,
				newChatView(*hideReasoning, dim))
			return err
		}
		return chatREPL(cmd, cl, base, opts.options(), *system, *asJSON, opts.showUsage, func() *chatView { return newChatView(*hideReasoning, dim) })
	}
	return c
}

// parseFormat reads --format: "json", @FILE (a JSON Schema in a file) or
// an inline JSON Schema; nil when not given. The schema's key order is
// kept (properties are generated in it). Whether the daemon can enforce
// the schema is the daemon's to say (bad_request naming the keyword).
func parseFormat(flag string) (*wire.Format, error) {
	switch {
	case flag == "":
		return nil, nil
	case flag == wire.FormatJSON:
		return &wire.Format{JSON: true}, nil
	case strings.HasPrefix(flag, "@"):
		file := flag[1:]
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("--format: %w", err)
		}
		schema, err := wire.ObjectFromJSON(data)
		if err != nil {
			return nil, fmt.Errorf("--format %s: not a JSON Schema (a JSON object): %w", file, err)
		}
		return &wire.Format{Schema: schema}, nil
	}
	schema, err := wire.ObjectFromJSON([]byte(flag))
	if err != nil {
		return nil, fmt.Errorf("--format: want %q, @FILE.json or an inline JSON Schema object: %w", wire.FormatJSON, err)
	}
	return &wire.Format{Schema: schema}, nil
}

// parseToolChoice reads --tool-choice: a mode (auto, none, required) or
// the name of the tool to call; nil when not given.
func parseToolChoice(flag string) *wire.ToolChoice {
	switch flag {
	case "":
		return nil
	case wire.ToolChoiceAuto, wire.ToolChoiceNone, wire.ToolChoiceRequired:
		return &wire.ToolChoice{Mode: flag}
	}
	return &wire.ToolChoice{Name: flag}
}

// chatREPL runs the interactive conversation on the terminal: line
// editing and history at the prompt, Ctrl-C clearing the line (at an empty
// prompt, twice, leaving) or cancelling the running turn.
func chatREPL(cmd *cobra.Command, cl *client.Client, base wire.ChatArgs, opts []client.GenOption, system string, asJSON, showUsage bool, view func() *chatView) error {
	// SIGINT is caught for the whole conversation (the prompt reads in raw
	// mode, where Ctrl-C is a key, so it comes only while a turn runs).
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt)
	defer signal.Stop(sig)
	r := &repl{cl: cl, base: base, opts: opts, system: system, out: cmd.OutOrStdout(), errOut: cmd.ErrOrStderr(),
		asJSON: asJSON, showUsage: showUsage, view: view, tty: cli.WriterIsTerminal(cmd.ErrOrStderr()), readLine: promptReader(cmd.InOrStdin().(*os.File), cmd.OutOrStdout()),
		interrupts: func() (<-chan os.Signal, func()) {
			for len(sig) > 0 { // one from before this turn is not for it
				<-sig
			}
			return sig, func() {}
		}}
	return r.run(cmd.Context())
}

// replHelp is what /help prints.
const replHelp = `/help          this list
/reset         start a new conversation (the daemon forgets this one)
/system TEXT   start a new conversation with the system prompt TEXT (/system alone shows it)
/exit, /quit   leave (as Ctrl-D)
Ctrl-C         clear the line; at an empty prompt press it twice to leave; while the model
               answers, stop the answer (the conversation goes on)
Any other line starting with / is refused (type it with a leading space to send it).
`

// interrupted is Ctrl-C at the prompt; cleared says the line had text,
// now cleared.
type interrupted struct{ cleared bool }

func (interrupted) Error() string { return "interrupted" }

// repl is one interactive conversation in a daemon session.
type repl struct {
	cl                *client.Client
	base              wire.ChatArgs
	opts              []client.GenOption // each turn's (max tokens, sampling, …)
	system            string             // the system prompt of the conversation ("" none)
	out, errOut       io.Writer
	asJSON, showUsage bool
	view              func() *chatView // a fresh view for each answer
	tty               bool             // errOut is a terminal: the queued note is rewritten in place
	// readLine reads one line: io.EOF on Ctrl-D, interrupted on Ctrl-C.
	readLine func() (string, error)
	// interrupts delivers Ctrl-C while a turn runs, until stop.
	interrupts func() (ch <-chan os.Signal, stop func())

	session string
	pending []wire.Message // sent with the next turn (the system prompt)
}

func (r *repl) run(ctx context.Context) error {
	if err := r.newConversation(ctx); err != nil {
		return err
	}
	defer func() { r.cl.CloseSession(context.Background(), r.session) }()
	h := r.cl.Hello()
	fmt.Fprintf(r.errOut, "chatting with %s (%s); /help lists the commands, /exit or Ctrl-D leaves\n", h.Bundle.Model, h.Bundle.Revision)
	armed := false // Ctrl-C at an empty prompt once: a second one leaves
	for {
		line, err := r.readLine()
		var in interrupted
		switch {
		case err == io.EOF:
			return nil
		case errors.As(err, &in):
			if in.cleared || !armed {
				if !in.cleared {
					fmt.Fprintln(r.errOut, "(Ctrl-C again or Ctrl-D to leave)")
				}
				armed = !in.cleared
				continue
			}
			return nil
		case err != nil:
			return err
		}
		armed = false
		if strings.TrimSpace(line) == "" {
			continue
		}
		if strings.HasPrefix(line, "/") {
			done, err := r.command(ctx, line)
			if done || err != nil {
				return err
			}
			continue
		}
		if err := r.turn(ctx, strings.TrimSpace(line)); err != nil {
			return err
		}
	}
}

// command runs a /command; done says leave.
func (r *repl) command(ctx context.Context, line string) (done bool, err error) {
	name, arg, _ := strings.Cut(strings.TrimSpace(line), " ")
	arg = strings.TrimSpace(arg)
	switch name {
	case "/exit", "/quit":
		return true, nil
	case "/help":
		fmt.Fprint(r.errOut, replHelp)
	case "/reset":
		if err := r.newConversation(ctx); err != nil {
			return false, err
		}
		fmt.Fprintln(r.errOut, "new conversation")
	case "/system":
		if arg == "" {
			if r.system == "" {
				fmt.Fprintln(r.errOut, "no system prompt (/system TEXT sets one)")
			} else {
				fmt.Fprintf(r.errOut, "system prompt: %s\n", r.system)
			}
			return false, nil
		}
		r.system = arg
		if err := r.newConversation(ctx); err != nil {
			return false, err
		}
		fmt.Fprintln(r.errOut, "new conversation with that system prompt")
	default:
		fmt.Fprintf(r.errOut, "unknown command %s: /help lists them (a message starting with / is sent with a leading space)\n", name)
	}
	return false, nil
}

// newConversation replaces the session with a fresh one, the system
// prompt going with its first turn.
func (r *repl) newConversation(ctx context.Context) error {
	if r.session != "" {
		r.cl.CloseSession(ctx, r.session)
		r.session = ""
	}
	sess, err := r.cl.OpenSession(ctx)
	if err != nil {
		return err
	}
	r.session, r.pending = sess, nil
	if r.system != "" {
		r.pending = []wire.Message{{Role: "system", Content: r.system}}
	}
	return nil
}

// turn sends one user message and streams the answer. Ctrl-C stops the
// answer; an error the daemon answers (context_exceeded, busy, …) is
// shown and the conversation goes on. Only a lost connection ends it.
func (r *repl) turn(ctx context.Context, message string) error {
	tctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sig, stop := r.interrupts()
	defer stop()
	go func() {
		select {
		case <-sig:
			cancel()
		case <-tctx.Done():
		}
	}()
	req := r.base
	req.Session = r.session
	req.Messages = append(append([]wire.Message(nil), r.pending...), wire.Message{Role: "user", Content: message})
	view := newChatView(false, false)
	if r.view != nil {
		view = r.view()
	}
	q := &queueNote{out: r.out, errOut: r.errOut, tty: r.tty, asJSON: r.asJSON}
	_, err := printStream(r.cl.Chat(tctx, req, append(slices.Clip(r.opts), q.option())...), q, r.out, r.errOut, r.asJSON, r.showUsage, view)
	var we *wire.Error
	switch {
	case err == nil:
		r.pending = nil
	case ctx.Err() != nil:
		return ctx.Err()
	case tctx.Err() != nil:
		fmt.Fprintln(r.out)
		fmt.Fprintln(r.errOut, "[stopped]")
	case errors.As(err, &we):
		fmt.Fprintf(r.errOut, "forgectl: %v\n", err)
		if we.Code == wire.CodeContextExceeded {
			fmt.Fprintln(r.errOut, "the conversation no longer fits the context: /reset starts a new one (or send a shorter message, or --max-tokens less)")
		}
	default:
		return err
	}
	return nil
}

// ctrlC is the key Ctrl-C reaches the line editor as: x/term ends
// ReadLine on Ctrl-C as on Ctrl-D (io.EOF for both), so the reader
// hands it on as this otherwise unused control key followed by Enter,
// and the editor's key callback clears the line and notes it.
const ctrlC = 0x1c

// ctrlCReader turns each Ctrl-C byte into ctrlC and Enter.
type ctrlCReader struct {
	r    io.Reader
	rest []byte
}

func (c *ctrlCReader) Read(p []byte) (int, error) {
	if len(c.rest) == 0 {
		buf := make([]byte, len(p))
		n, err := c.r.Read(buf)
		for _, b := range buf[:n] {
			if b == 3 {
				c.rest = append(c.rest, ctrlC, '\r')
			} else {
				c.rest = append(c.rest, b)
			}
		}
		if len(c.rest) == 0 {
			return 0, err
		}
	}
	n := copy(p, c.rest)
	c.rest = c.rest[n:]
	return n, nil
}

// promptReader reads one line per call: with x/term's line editor (raw mode
// only while reading, so the answer streams and Ctrl-C interrupts it), or
// plain lines when the terminal cannot be put in raw mode.
func promptReader(in *os.File, out io.Writer) func() (string, error) {
	fd := int(in.Fd())
	edit := lineEditor(in, out)
	plain := bufio.NewScanner(in)
	return func() (string, error) {
		if state, err := term.MakeRaw(fd); err == nil {
			defer term.Restore(fd, state)
			return edit()
		}
		fmt.Fprint(out, "> ")
		if !plain.Scan() {
			if err := plain.Err(); err != nil {
				return "", err
			}
			return "", io.EOF
		}
		return plain.Text(), nil
	}
}

// lineEditor reads lines from a terminal in raw mode with editing and
// history: io.EOF on Ctrl-D at an empty line, interrupted on Ctrl-C.
func lineEditor(in io.Reader, out io.Writer) func() (string, error) {
	editor := term.NewTerminal(struct {
		io.Reader
		io.Writer
	}{&ctrlCReader{r: in}, out}, "> ")
	var intr *interrupted
	editor.AutoCompleteCallback = func(line string, _ int, key rune) (string, int, bool) {
		if key != ctrlC {
			return "", 0, false
		}
		intr = &interrupted{cleared: line != ""}
		return "", 0, true
	}
	return func() (string, error) {
		intr = nil
		line, err := editor.ReadLine()
		if err == nil && intr != nil {
			return "", *intr
		}
		return line, err
	}
}
