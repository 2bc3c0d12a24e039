package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
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
the new text. Type /exit or press Ctrl-D to leave.`,
	}
	asJSON := cli.JSONFlag(c)
	socket := cli.SocketFlag(c)
	opts := addGenFlags(c)
	system := c.Flags().String("system", "", "system prompt")
	thinking := c.Flags().String("thinking", "on", "reasoning before the answer: on or off")
	budget := c.Flags().Uint64("thinking-budget", 0, "at most this many reasoning tokens (0: no limit)")
	toolsFile := c.Flags().String("tools", "", "a JSON file with an array of tool schemas the model may call (key order is kept)")
	c.RunE = func(cmd *cobra.Command, args []string) error {
		if *thinking != "on" && *thinking != "off" {
			return fmt.Errorf("--thinking must be on or off, got %q", *thinking)
		}
		base := wire.ChatArgs{MaxTokens: &opts.maxTokens, Sampling: opts.sampling(), Speculative: opts.speculative(),
			Stop: opts.stop, Priority: opts.priority(), Thinking: *thinking, ThinkingBudget: *budget}
		if *toolsFile != "" {
			data, err := os.ReadFile(*toolsFile)
			if err != nil {
				return fmt.Errorf("--tools: %w", err)
			}
			if base.Tools, err = wire.ObjectsFromJSON(data); err != nil {
				return fmt.Errorf("--tools %s: %w", *toolsFile, err)
			}
		}
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
		if !interactive {
			req := base
			req.Messages = append(first, wire.Message{Role: "user", Content: message})
			_, err := printStream(cl.Chat(cmd.Context(), req), cmd.OutOrStdout(), cmd.ErrOrStderr(), *asJSON, opts.showUsage)
			return err
		}
		return chatREPL(cmd, cl, base, first, *asJSON, opts.showUsage)
	}
	return c
}

// chatREPL runs a conversation in a daemon session until /exit, Ctrl-D or
// Ctrl-C at the prompt. Input lines have editing and history (up/down).
func chatREPL(cmd *cobra.Command, cl *client.Client, base wire.ChatArgs, pending []wire.Message, asJSON, showUsage bool) error {
	ctx := cmd.Context()
	sess, err := cl.OpenSession(ctx)
	if err != nil {
		return err
	}
	defer cl.CloseSession(ctx, sess)
	out := cmd.OutOrStdout()
	readLine := promptReader(cmd.InOrStdin().(*os.File), out)
	h := cl.Hello()
	fmt.Fprintf(cmd.ErrOrStderr(), "chatting with %s (%s); /exit to leave\n", h.Bundle.Model, h.Bundle.Revision)
	for {
		line, err := readLine()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		switch line = strings.TrimSpace(line); line {
		case "":
			continue
		case "/exit", "/quit":
			return nil
		}
		req := base
		req.Session = sess
		req.Messages = append(pending, wire.Message{Role: "user", Content: line})
		pending = nil
		if _, err := printStream(cl.Chat(ctx, req), out, cmd.ErrOrStderr(), asJSON, showUsage); err != nil {
			return err
		}
	}
}

// promptReader reads one line per call: with x/term's line editor (raw mode
// only while reading, so the answer streams and Ctrl-C works as usual), or
// plain lines when the terminal cannot be put in raw mode.
func promptReader(in *os.File, out io.Writer) func() (string, error) {
	fd := int(in.Fd())
	editor := term.NewTerminal(struct {
		io.Reader
		io.Writer
	}{in, out}, "> ")
	plain := bufio.NewScanner(in)
	return func() (string, error) {
		if state, err := term.MakeRaw(fd); err == nil {
			defer term.Restore(fd, state)
			return editor.ReadLine()
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
