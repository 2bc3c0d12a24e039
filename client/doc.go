// Package client is the Go library apps use to talk to forged over its Unix
// socket (docs/PROTOCOL.md). Dial connects and says hello; Chat and Generate
// return a Stream to range over; errors from the daemon are *Error with the
// protocol's Code. The wire types live in client/wire, shared with the daemon.
//
// A Client is safe for concurrent use and multiplexes requests over one
// connection. Consume every Stream (range over Tokens, or call Result):
// events wait for their reader, which holds up the connection's other
// replies, exactly as the daemon holds a client that stops reading.
//
//	c, err := client.Dial(ctx, "", client.Options{Name: "myapp"})
//	s := c.Chat(ctx, wire.ChatArgs{Messages: []wire.Message{{Role: "user", Content: "Hi"}}}, client.MaxTokens(256))
//	for ev, err := range s.Tokens() { … ev.Text … }
//	res, err := s.Result() // usage, finish reason, revision, context entry
//
// The arguments the protocol takes present-or-absent are options after the
// args struct: MaxTokens, Sampling, Speculative, Prompt (Generate's text),
// and OnQueued, which is told the request's place while it waits for a
// generation slot or for memory. Arguments whose zero is the default
// (Session, Stop, Priority, Thinking…) are plain fields. Each entry point
// has a runnable example.
//
// Tools (and tool calls) are wire.Object values, which keep their key order
// because the chat template renders them in it: build them from JSON,
// wire.ObjectsFromJSON(toolsJSON), or json.Unmarshal into []wire.Object.
//
// A chat's output comes parsed (docs/PROTOCOL.md §5). Each token event has,
// beside the model's Text, the Reasoning and Content it completed, each
// ToolCall whole once it closed (Name, ID, Arguments as a wire.Object in the
// model's key order: Keys, Decode, MarshalJSON) and Diagnostics for what did
// not parse (its text stays in Content). The result has the same for the
// whole turn, and FinishReason wire.FinishToolCalls when the model stopped
// to call tools. To answer them, send res.Message() (the assistant turn
// with its reasoning and calls) and one tool message per result:
//
//	answer, _ := res.Message()
//	next := append(history, answer, wire.Message{Role: "tool", Content: result, ToolCallID: res.ToolCalls[0].ID})
package client
