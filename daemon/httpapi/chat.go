package httpapi

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"time"

	"github.com/forgedaemon/forged/client/wire"
	"github.com/forgedaemon/forged/daemon/backend"
	"github.com/forgedaemon/forged/daemon/ops"
)

// usage is OpenAI's usage object.
type usage struct {
	PromptTokens        uint64 `json:"prompt_tokens"`
	CompletionTokens    uint64 `json:"completion_tokens"`
	TotalTokens         uint64 `json:"total_tokens"`
	PromptTokensDetails struct {
		CachedTokens uint64 `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
}

func usageOf(u wire.Usage) *usage {
	out := &usage{PromptTokens: u.PromptTokens, CompletionTokens: u.GeneratedTokens, TotalTokens: u.PromptTokens + u.GeneratedTokens}
	out.PromptTokensDetails.CachedTokens = u.CachedTokens
	return out
}

// finishReason maps the daemon's finish reason: a stop string is "stop";
// "tool_calls" (a turn that called tools) and "length" are OpenAI's too.
func finishReason(r string) string {
	switch r {
	case wire.FinishLength, wire.FinishToolCalls:
		return r
	}
	return "stop" // stop token or stop string
}

type message struct {
	Role             string     `json:"role"`
	Content          *string    `json:"content"`
	ReasoningContent string     `json:"reasoning_content,omitempty"`
	ToolCalls        []toolCall `json:"tool_calls,omitempty"`
}

type choice struct {
	Index        int      `json:"index"`
	Message      *message `json:"message,omitempty"`
	Delta        *delta   `json:"delta,omitempty"`
	Text         *string  `json:"text,omitempty"`
	Logprobs     any      `json:"logprobs"`
	FinishReason *string  `json:"finish_reason"`
}

type delta struct {
	Role             string     `json:"role,omitempty"`
	Content          *string    `json:"content,omitempty"`
	ReasoningContent *string    `json:"reasoning_content,omitempty"`
	ToolCalls        []toolCall `json:"tool_calls,omitempty"`
}

type completion struct {
	ID                string   `json:"id"`
	Object            string   `json:"object"`
	Created           int64    `json:"created"`
	Model             string   `json:"model"`
	SystemFingerprint string   `json:"system_fingerprint"`
	Choices           []choice `json:"choices"`
	Usage             *usage   `json:"usage,omitempty"`
}

// chunk is a streamed completion: with include_usage every chunk has a
// usage key (null until the last).
type chunk struct {
	completion
	Usage *usage `json:"usage"`
}

func randomID(prefix string) string {
	b := make([]byte, 12)
	rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// caller builds the op handlers' view of an HTTP request's caller.
func (a *API) caller(r *http.Request, event func(name string, data any) error) ops.Caller {
	w := callerOf(r)
	return ops.Caller{ID: a.ids.Add(1), Peer: w.peer, Client: w.client, Event: event}
}

// served is the model id the answers name and /v1/models lists.
func (a *API) served() (id, revision string) {
	b := a.h.Backend().Model().Bundle
	id = b.Repo
	if id == "" {
		id = b.Model
	}
	if id == "" {
		id = "forged"
	}
	return id, b.Revision
}

func (a *API) chatCompletions(w http.ResponseWriter, r *http.Request) {
	var q chatRequest
	if e := a.decode(w, r, &q); e != nil {
		writeError(w, e)
		return
	}
	plan, e := q.toWire()
	if e != nil {
		writeError(w, e)
		return
	}
	model, revision := a.served()
	base := completion{ID: randomID("chatcmpl-"), Object: "chat.completion", Created: time.Now().Unix(), Model: model, SystemFingerprint: revision}
	if !q.Stream {
		res, err := a.h.Chat(r.Context(), a.caller(r, func(string, any) error { return nil }), plan.args)
		if err != nil {
			writeError(w, fromDaemon(err, "messages"))
			return
		}
		fr := finishReason(res.FinishReason)
		base.SystemFingerprint = res.Revision
		base.Choices = []choice{{Message: wholeMessage(res), FinishReason: &fr}}
		base.Usage = usageOf(res.Usage)
		writeJSON(w, http.StatusOK, base)
		return
	}

	base.Object = "chat.completion.chunk"
	s := a.newStream(w, q.includeUsage())
	ev := func(name string, data any) error {
		t, ok := data.(wire.TokenEvent)
		if !ok || name != wire.EventToken {
			return nil // queued: the status line waits for the first token
		}
		if !s.started {
			empty := ""
			if err := s.sendHeld(base, choice{Delta: &delta{Role: "assistant", Content: &empty}}); err != nil {
				return err
			}
		}
		for _, p := range parts(t) {
			d := &delta{}
			switch {
			case p.call != nil:
				d.ToolCalls = []toolCall{toolCallOf(*p.call, true)}
			case p.reasoning != "":
				d.ReasoningContent = &p.reasoning
			default:
				d.Content = &p.content
			}
			if err := s.send(base, choice{Delta: d}); err != nil {
				return err
			}
		}
		return nil
	}
	res, err := a.h.Chat(r.Context(), a.caller(r, ev), plan.args)
	if err != nil {
		s.fail(fromDaemon(err, "messages"))
		return
	}
	base.SystemFingerprint = res.Revision
	fr := finishReason(res.FinishReason)
	s.end(base, choice{Delta: &delta{}, FinishReason: &fr}, res.Usage)
}

func (a *API) completions(w http.ResponseWriter, r *http.Request) {
	var q completionRequest
	if e := a.decode(w, r, &q); e != nil {
		writeError(w, e)
		return
	}
	args, e := q.toWire()
	if e != nil {
		writeError(w, e)
		return
	}
	model, revision := a.served()
	base := completion{ID: randomID("cmpl-"), Object: "text_completion", Created: time.Now().Unix(), Model: model, SystemFingerprint: revision}
	if !q.Stream {
		res, err := a.h.Generate(r.Context(), a.caller(r, func(string, any) error { return nil }), args)
		if err != nil {
			writeError(w, fromDaemon(err, "prompt"))
			return
		}
		fr := finishReason(res.FinishReason)
		base.SystemFingerprint = res.Revision
		base.Choices = []choice{{Text: &res.Text, FinishReason: &fr}}
		base.Usage = usageOf(res.Usage)
		writeJSON(w, http.StatusOK, base)
		return
	}
	s := a.newStream(w, q.includeUsage())
	ev := func(name string, data any) error {
		t, ok := data.(wire.TokenEvent)
		if !ok || name != wire.EventToken || (t.Text == "" && s.started) {
			return nil
		}
		return s.send(base, choice{Text: &t.Text})
	}
	res, err := a.h.Generate(r.Context(), a.caller(r, ev), args)
	if err != nil {
		s.fail(fromDaemon(err, "prompt"))
		return
	}
	base.SystemFingerprint = res.Revision
	fr := finishReason(res.FinishReason)
	empty := ""
	s.end(base, choice{Text: &empty, FinishReason: &fr}, res.Usage)
}

// modelObject is one entry of /v1/models: OpenAI's fields, then forged's.
type modelObject struct {
	ID             string   `json:"id"`
	Object         string   `json:"object"`
	Created        int64    `json:"created"`
	OwnedBy        string   `json:"owned_by"`
	Name           string   `json:"name"`
	Revision       string   `json:"revision"`
	ContextEntries []uint64 `json:"context_entries"`
	State          string   `json:"state"`
}

func (a *API) modelList() []modelObject {
	id, _ := a.served()
	var out []modelObject
	for _, m := range a.h.Models().Models {
		out = append(out, modelObject{ID: id, Object: "model", OwnedBy: "forged", Name: m.Model, Revision: m.Revision,
			ContextEntries: m.ContextEntries, State: m.State})
	}
	return out
}

func (a *API) models(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, struct {
		Object string        `json:"object"`
		Data   []modelObject `json:"data"`
	}{"list", a.modelList()})
}

func (a *API) model(w http.ResponseWriter, r *http.Request) {
	for _, m := range a.modelList() {
		if m.ID == r.PathValue("id") {
			writeJSON(w, http.StatusOK, m)
			return
		}
	}
	writeError(w, &apiError{status: http.StatusNotFound, Type: "invalid_request_error", Param: strp("model"), Code: strp("model_not_found"),
		Message: fmt.Sprintf("no model %q; this daemon serves one: GET /v1/models", r.PathValue("id"))})
}

// health is 200 when the model is ready and 503 otherwise (docs/HTTP.md),
// with the state and why: a probe tells "unloaded" (installed; the next
// request loads it) from "unavailable" by the state, not the status.
func (a *API) health(w http.ResponseWriter, _ *http.Request) {
	state, reason, _ := a.h.CurrentState()
	_, revision := a.served()
	body := struct {
		Status   string `json:"status"`
		State    string `json:"state"`
		Reason   string `json:"reason,omitempty"`
		Backend  string `json:"backend,omitempty"`
		Revision string `json:"revision,omitempty"`
	}{Status: "ok", State: state, Reason: reason, Revision: revision}
	if info := backend.Info(a.h.Backend()); info != nil {
		body.Backend = info.Name
	}
	status := http.StatusOK
	if state != wire.StateReady {
		status, body.Status = http.StatusServiceUnavailable, "unavailable"
	}
	writeJSON(w, status, body)
}
