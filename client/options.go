package client

import (
	"errors"

	"github.com/forgedaemon/forged/client/wire"
)

// GenOption sets an optional argument of Chat or Generate: the arguments
// the protocol needs present-or-absent (wire pointers) are set this way,
// so a caller writes client.MaxTokens(8), not a pointer to a uint64.
// Options apply after the fields of the args struct, in order. Arguments
// whose zero value is the default (Session, Stop, Priority, Thinking…)
// stay plain fields of wire.ChatArgs and wire.GenerateArgs.
type GenOption func(*genOptions)

type genOptions struct {
	maxTokens   *uint64
	sampling    *wire.Sampling
	speculative *bool
	prompt      *string
	onQueued    func(wire.QueuedEvent)
}

// MaxTokens caps the generated tokens (default: the daemon's, 512).
func MaxTokens(n uint64) GenOption { return func(o *genOptions) { o.maxTokens = &n } }

// Sampling samples with s instead of greedy decoding.
func Sampling(s wire.Sampling) GenOption { return func(o *genOptions) { o.sampling = &s } }

// Speculative turns speculative decoding (the DFlash2 drafter, prompt
// lookup) on or off; it is on by default and never changes greedy output.
func Speculative(on bool) GenOption { return func(o *genOptions) { o.speculative = &on } }

// Prompt is Generate's text prompt (instead of wire.GenerateArgs.IDs); it
// is not an option of Chat, which takes messages.
func Prompt(text string) GenOption { return func(o *genOptions) { o.prompt = &text } }

// OnQueued is called with each queued event while the request waits (for
// a generation slot or for memory) before its first token: its place in
// the queue, position 1 being next. It runs on the goroutine reading the
// Stream (inside Tokens or Result), before the tokens that follow.
func OnQueued(f func(wire.QueuedEvent)) GenOption { return func(o *genOptions) { o.onQueued = f } }

func collect(opts []GenOption) genOptions {
	var o genOptions
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	return o
}

var errPromptOnChat = errors.New("client.Prompt is an option of Generate; Chat takes wire.ChatArgs.Messages")

// chatArgs is args with o applied.
func (o genOptions) chatArgs(args wire.ChatArgs) (wire.ChatArgs, error) {
	if o.prompt != nil {
		return args, errPromptOnChat
	}
	o.setShared(&args.MaxTokens, &args.Sampling, &args.Speculative)
	return args, nil
}

// generateArgs is args with o applied.
func (o genOptions) generateArgs(args wire.GenerateArgs) wire.GenerateArgs {
	o.setShared(&args.MaxTokens, &args.Sampling, &args.Speculative)
	if o.prompt != nil {
		args.Prompt = o.prompt
	}
	return args
}

// setShared sets the fields chat and generate share to the options given.
func (o genOptions) setShared(maxTokens **uint64, sampling **wire.Sampling, speculative **bool) {
	if o.maxTokens != nil {
		*maxTokens = o.maxTokens
	}
	if o.sampling != nil {
		*sampling = o.sampling
	}
	if o.speculative != nil {
		*speculative = o.speculative
	}
}
