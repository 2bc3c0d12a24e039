package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/forgedaemon/forged/client"
	"github.com/forgedaemon/forged/client/wire"
	"github.com/spf13/cobra"
	"golang.org/x/term"
)

func init() {
	c := &cobra.Command{
		Use:   "chat [MESSAGE]",
		Short: "Chat with the served model: one message, or an interactive session",
		Long: `With a message (as arguments, or on stdin when it is not a terminal), send it as one
user turn and stream the answer. Without one on a terminal, start an interactive
conversation: the daemon keeps its history in a session, so each turn only prefills
the new text. Type /exit or press Ctrl-D to leave.`,
	}
	asJSON := jsonFlag(c)
	socket := socketFlag(c)
	opts := addGenFlags(c)
	system := c.Flags().String("system", "", "system prompt")
	thinking := c.Flags().String("thinking", "on", "reasoning before the answer: on or off")
	budget := c.Flags().Uint64("thinking-budget", 0, "at most this many reasoning tokens (0: no limit)")
	c.RunE = func(cmd *cobra.Command, args []string) error {
		if *thinking != "on" && *thinking != "off" {
			return fmt.Errorf("--thinking must be on or off, got %q", *thinking)
		}
		base := wire.ChatArgs{MaxTokens: &opts.maxTokens, Sampling: opts.sampling(), Speculative: opts.speculative(),
			Stop: opts.stop, Priority: opts.priority(), Thinking: *thinking, ThinkingBudget: *budget}
		var first []wire.Message
		if *system != "" {
			first = append(first, wire.Message{Role: "system", Content: *system})
		}
		message := strings.Join(args, " ")
		interactive := message == "" && isTerminal(cmd.InOrStdin())
		if message == "" && !interactive {
			data, err := io.ReadAll(cmd.InOrStdin())
			if err != nil {
				return err
			}
			if message = strings.TrimSpace(string(data)); message == "" {
				return fmt.Errorf("no message: give it as arguments or on stdin")
			}
		}
		cl, err := dialDaemon(cmd.Context(), *socket)
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
	addCommand(c)
}

// chatREPL runs a conversation in a daemon session until /exit or EOF.
func chatREPL(cmd *cobra.Command, cl *client.Client, base wire.ChatArgs, pending []wire.Message, asJSON, showUsage bool) error {
	ctx := cmd.Context()
	sess, err := cl.OpenSession(ctx)
	if err != nil {
		return err
	}
	defer cl.CloseSession(ctx, sess)
	out := cmd.OutOrStdout()
	in := bufio.NewScanner(cmd.InOrStdin())
	in.Buffer(make([]byte, 0, 64<<10), 1<<20)
	h := cl.Hello()
	fmt.Fprintf(cmd.ErrOrStderr(), "chatting with %s (%s); /exit to leave\n", h.Bundle.Model, h.Bundle.Revision)
	for {
		fmt.Fprint(out, "> ")
		if !in.Scan() {
			fmt.Fprintln(out)
			return in.Err()
		}
		line := strings.TrimSpace(in.Text())
		switch line {
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

func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
