package modelcmd

import (
	"fmt"

	"github.com/forgedaemon/forged/ane/text/chat"
	"github.com/forgedaemon/forged/internal/cli"
	"github.com/spf13/cobra"
)

func newRenderChatCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "render-chat",
		Short: "Render a conversation to prompt text with a checkpoint's chat template",
		Long: `render-chat renders {"messages": [...], "tools": [...], "add_generation_prompt": true,
"enable_thinking": false, ...} with the checkpoint's Jinja chat template, exactly as
Hugging Face's apply_chat_template(..., tokenize=False) does. Keys other than messages,
tools and add_generation_prompt are passed to the template as variables.

Without --jsonl it reads one JSON request from standard input and prints the text
(or {"text": ...} with --json). With --jsonl it reads one request per line and writes
one {"text": ...} line per request; a bad line stops with an error naming the line.`,
		Args: cobra.NoArgs,
	}
	path := c.Flags().String("tokenizer-config", "", "tokenizer_config.json, chat_template.jinja, or the directory holding them (required)")
	jsonl := c.Flags().Bool("jsonl", false, "read JSON lines on standard input, write {\"text\": ...} lines")
	asJSON := cli.JSONFlag(c)
	_ = c.MarkFlagRequired("tokenizer-config")
	c.RunE = func(cmd *cobra.Command, _ []string) error {
		tpl, err := chat.LoadTemplate(*path)
		if err != nil {
			return err
		}
		if *jsonl {
			return chat.RenderJSONLines(tpl, cmd.InOrStdin(), cmd.OutOrStdout())
		}
		text, err := chat.RenderDocument(tpl, cmd.InOrStdin())
		if err != nil {
			return err
		}
		if *asJSON {
			return cli.WriteJSON(cmd.OutOrStdout(), map[string]string{"text": text})
		}
		_, err = fmt.Fprint(cmd.OutOrStdout(), text)
		return err
	}
	return c
}
