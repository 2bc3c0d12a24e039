// Package modelcmd holds forgectl's commands that work on model files
// without the daemon: run and logits (the reference engine), tokenize and
// detokenize, render-chat (the chat template) and inspect (safetensors,
// .npy and config files).
package modelcmd

import "github.com/spf13/cobra"

// Commands builds the model commands, fresh each call.
func Commands() []*cobra.Command {
	return []*cobra.Command{newRunCmd(), newLogitsCmd(), tokenizeCmd(), detokenizeCmd(), newRenderChatCmd(), newInspectCmd()}
}
