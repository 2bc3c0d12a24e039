// Package wire holds the forged socket protocol's message types, framing and
// the pre-decode validator, shared by the daemon and the Go client.
// docs/PROTOCOL.md is the normative description; this package follows it.
package wire

import "fmt"

// ProtocolVersion is the protocol this package speaks.
const ProtocolVersion = 1

// Error codes (docs/PROTOCOL.md §3).
const (
	CodeBadRequest      = "bad_request"
	CodeTooLarge        = "too_large"
	CodeUnauthorized    = "unauthorized"
	CodeNotFound        = "not_found"
	CodeBusy            = "busy"
	CodeContextExceeded = "context_exceeded"
	CodeUnavailable     = "unavailable"
	CodeCancelled       = "cancelled"
	CodeProtocolVersion = "protocol_version"
	CodeInternal        = "internal"
)

// Error is the error object of a failed reply. It is also a Go error, so a
// backend can return one to choose the code the caller sees.
type Error struct {
	Code    string `msgpack:"code" json:"code"`
	Message string `msgpack:"message" json:"message"`
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// Errorf builds an *Error with a formatted message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Operation names.
const (
	OpHello          = "hello"
	OpStatus         = "status"
	OpModels         = "models"
	OpTokenize       = "tokenize"
	OpDetokenize     = "detokenize"
	OpChat           = "chat"
	OpGenerate       = "generate"
	OpSessionOpen    = "session.open"
	OpSessionClose   = "session.close"
	OpCancel         = "cancel"
	OpSubscribe      = "subscribe"
	OpPull           = "pull"
	OpVerify         = "verify"
	OpUpdateCheck    = "update.check"
	OpUpdateApply    = "update.apply"
	OpUpdateRollback = "update.rollback"
	OpLoad           = "load"
	OpUnload         = "unload"
	OpPin            = "pin"
	OpGC             = "gc"
	OpConfigGet      = "config.get"
	OpConfigSet      = "config.set"
	OpShutdown       = "shutdown"
)

// Event names.
const (
	EventToken = "token"
	EventState = "state"
	// EventQueued is sent while a generation waits, for memory or for a
	// generation slot (its data is a QueuedEvent), when it starts waiting
	// and when its place changes. It is not sent to a request that runs at
	// once.
	EventQueued = "queued"
)

// QueuedEvent is the data of a queued event: why the generation waits and
// its place in that queue (position 1 is next).
type QueuedEvent struct {
	Reason   string `msgpack:"reason"`
	Position uint64 `msgpack:"position"`
}

// Reply is the daemon's one answer to a request.
type Reply struct {
	ID     uint64 `msgpack:"id"`
	OK     bool   `msgpack:"ok"`
	Result any    `msgpack:"result,omitempty"`
	Error  *Error `msgpack:"error,omitempty"`
}

// Event is a message pushed for a running request before its reply.
type Event struct {
	ID    uint64 `msgpack:"id"`
	Event string `msgpack:"event"`
	Data  any    `msgpack:"data"`
}

// OutRequest is a request as a client encodes it.
type OutRequest struct {
	ID   uint64 `msgpack:"id"`
	Op   string `msgpack:"op"`
	Args any    `msgpack:"args,omitempty"`
}

// Bundle names what the daemon serves.
type Bundle struct {
	Repo     string `msgpack:"repo" json:"repo"`
	Revision string `msgpack:"revision" json:"revision"`
	Model    string `msgpack:"model" json:"model"`
}

// HelloArgs opens a connection.
type HelloArgs struct {
	Protocol uint64 `msgpack:"protocol"`
	Client   string `msgpack:"client"`
}

// HelloResult describes the daemon.
type HelloResult struct {
	Daemon       string   `msgpack:"daemon" json:"daemon"`
	Protocol     uint64   `msgpack:"protocol" json:"protocol"`
	Capabilities []string `msgpack:"capabilities" json:"capabilities"`
	Bundle       Bundle   `msgpack:"bundle" json:"bundle"`
	State        string   `msgpack:"state" json:"state"`
	MaxFrame     uint64   `msgpack:"max_frame" json:"max_frame"`
	// Backend names the engine serving the bundle; absent until a model
	// has been loaded (docs/PROTOCOL.md §4).
	Backend *BackendInfo `msgpack:"backend,omitempty" json:"backend,omitempty"`
}

// Backend names (BackendInfo.Name, the config key backend).
const (
	BackendCoreAI = "coreai" // the published Core AI packages, on the ANE
	BackendRef    = "ref"    // the pure-Go reference engine over export/
)

// BackendInfo says what runs the model. Name is BackendCoreAI or
// BackendRef; the other fields describe that backend and are absent for
// the other one.
type BackendInfo struct {
	Name string `msgpack:"name" json:"name"`
	// Why is how the backend was chosen: "auto: ..." or "forced by config".
	Why string `msgpack:"why,omitempty" json:"why,omitempty"`
	// Core AI: the compute-unit preference, the bridge's release string,
	// the OS's MPSGraph version, each package's MPSGraph version as
	// "file=version (compiled|source)", the chip and the KV cache format.
	ComputeUnits    string   `msgpack:"compute_units,omitempty" json:"compute_units,omitempty"`
	BridgeRelease   string   `msgpack:"bridge_release,omitempty" json:"bridge_release,omitempty"`
	BridgePath      string   `msgpack:"bridge_path,omitempty" json:"bridge_path,omitempty"`
	OSMPSGraph      string   `msgpack:"os_mpsgraph,omitempty" json:"os_mpsgraph,omitempty"`
	PackageMPSGraph []string `msgpack:"package_mpsgraph,omitempty" json:"package_mpsgraph,omitempty"`
	Chip            string   `msgpack:"chip,omitempty" json:"chip,omitempty"`
	KV              string   `msgpack:"kv,omitempty" json:"kv,omitempty"`
	// Reference engine: the kernel level its products run
	// ("avx512-vnni", "avx512", "avx2", "neon-dotprod", "neon", "go").
	Kernels string `msgpack:"kernels,omitempty" json:"kernels,omitempty"`
	// Reference engine: the numeric mode of its elementwise functions and
	// INT8 products, "fast" (vectorised and integer, serving's default) or
	// "exact" (the reference).
	Numerics string `msgpack:"numerics,omitempty" json:"numerics,omitempty"`
}

// Memory is the daemon's memory account in bytes.
type Memory struct {
	Weights uint64 `msgpack:"weights" json:"weights"`
	KV      uint64 `msgpack:"kv" json:"kv"`
	State   uint64 `msgpack:"state" json:"state"`
	Scratch uint64 `msgpack:"scratch" json:"scratch"`
	Total   uint64 `msgpack:"total" json:"total"`
	GoHeap  uint64 `msgpack:"go_heap" json:"go_heap"`
}

// SessionInfo is one open session in a status result.
type SessionInfo struct {
	Session string `msgpack:"session" json:"session"`
	UID     uint32 `msgpack:"uid" json:"uid"`
	Client  string `msgpack:"client" json:"client"`
	Tokens  uint64 `msgpack:"tokens" json:"tokens"`
	Context uint64 `msgpack:"context" json:"context"`
	// Parked: the session's engine state was moved out of the model's
	// memory (to host memory or disk); its next turn resumes it without
	// prefilling again. Context is 0 while parked.
	Parked bool `msgpack:"parked,omitempty" json:"parked,omitempty"`
}

// RequestInfo is one queued or running generation in a status result.
// ID is the caller's own id, unique only on its connection; Seq numbers
// requests across the daemon (unique for the daemon's life).
type RequestInfo struct {
	ID        uint64 `msgpack:"id" json:"id"`
	Seq       uint64 `msgpack:"seq" json:"seq"`
	UID       uint32 `msgpack:"uid" json:"uid"`
	PID       int32  `msgpack:"pid,omitempty" json:"pid,omitempty"` // the caller's process; absent where the kernel does not say
	Client    string `msgpack:"client" json:"client"`
	Op        string `msgpack:"op" json:"op"`
	Priority  string `msgpack:"priority" json:"priority"` // PriorityInteractive or PriorityBackground
	State     string `msgpack:"state" json:"state"`
	AgeMS     uint64 `msgpack:"age_ms" json:"age_ms"` // since the daemon received it
	Generated uint64 `msgpack:"generated" json:"generated"`
}

// StatusResult is the result of status.
type StatusResult struct {
	Daemon      string        `msgpack:"daemon" json:"daemon"`
	Protocol    uint64        `msgpack:"protocol" json:"protocol"`
	State       string        `msgpack:"state" json:"state"`
	Reason      string        `msgpack:"reason" json:"reason"`
	Bundle      Bundle        `msgpack:"bundle" json:"bundle"`
	UptimeMS    uint64        `msgpack:"uptime_ms" json:"uptime_ms"`
	Connections uint64        `msgpack:"connections" json:"connections"`
	Queued      uint64        `msgpack:"queued" json:"queued"`
	Running     uint64        `msgpack:"running" json:"running"`
	Slots       uint64        `msgpack:"slots" json:"slots"`
	Sessions    []SessionInfo `msgpack:"sessions" json:"sessions"`
	// SessionsTotal counts every open session; Sessions lists at most
	// 1024 of them, the caller's uid's first.
	SessionsTotal uint64        `msgpack:"sessions_total" json:"sessions_total"`
	Requests      []RequestInfo `msgpack:"requests" json:"requests"`
	Memory        Memory        `msgpack:"memory" json:"memory"`
	// MemoryEstimate is the memory model's account of the same things
	// (weights from the manifest, KV from the cache format × rows in
	// use), next to the measured Memory; absent without a memory model.
	MemoryEstimate *Memory `msgpack:"memory_estimate,omitempty" json:"memory_estimate,omitempty"`
	// Speculation says how the loaded model drafts: "dflash2 DIR", "prompt
	// lookup", or "off: " and why a drafter was refused; absent when the
	// backend does not say (or no model is loaded).
	Speculation string `msgpack:"speculation,omitempty" json:"speculation,omitempty"`
	// Backend names the engine serving the bundle (as in hello).
	Backend *BackendInfo `msgpack:"backend,omitempty" json:"backend,omitempty"`
}

// ModelInfo is one model in a models result.
type ModelInfo struct {
	Model          string   `msgpack:"model" json:"model"`
	Repo           string   `msgpack:"repo" json:"repo"`
	Revision       string   `msgpack:"revision" json:"revision"`
	ContextEntries []uint64 `msgpack:"context_entries" json:"context_entries"`
	State          string   `msgpack:"state" json:"state"`
}

// ModelsResult is the result of models.
type ModelsResult struct {
	Models []ModelInfo `msgpack:"models" json:"models"`
}

// TokenizeArgs asks for the token ids of a text.
type TokenizeArgs struct {
	Text string `msgpack:"text"`
}

// TokenizeResult holds token ids.
type TokenizeResult struct {
	IDs []uint32 `msgpack:"ids" json:"ids"`
}

// DetokenizeArgs asks for the text of token ids.
type DetokenizeArgs struct {
	IDs []uint32 `msgpack:"ids"`
}

// DetokenizeResult holds text.
type DetokenizeResult struct {
	Text string `msgpack:"text" json:"text"`
}

// Sampling selects the sampler; absent means greedy.
type Sampling struct {
	Temperature float64 `msgpack:"temperature,omitempty" json:"temperature,omitempty"`
	TopP        float64 `msgpack:"top_p,omitempty" json:"top_p,omitempty"`
	TopK        uint64  `msgpack:"top_k,omitempty" json:"top_k,omitempty"`
	Seed        uint64  `msgpack:"seed,omitempty" json:"seed,omitempty"`
}

// Message is one chat message. ToolCalls keep their key order (see Object);
// a reply's calls become these with ToolCall.Object. The JSON tags are the
// names the chat template reads (reasoning as reasoning_content).
type Message struct {
	Role      string  `msgpack:"role" json:"role"`
	Content   string  `msgpack:"content" json:"content"`
	Name      string  `msgpack:"name,omitempty" json:"name,omitempty"`
	ToolCalls Objects `msgpack:"tool_calls,omitempty" json:"tool_calls,omitempty"`
	// Reasoning is an assistant turn's reasoning (a reply's reasoning),
	// given back so the template can render it where it does.
	Reasoning string `msgpack:"reasoning,omitempty" json:"reasoning_content,omitempty"`
	// ToolCallID names the call a tool message answers (a ToolCall's ID).
	ToolCallID string `msgpack:"tool_call_id,omitempty" json:"tool_call_id,omitempty"`
}

// ChatArgs asks for a chat completion. Tools keep their key order (see
// Object): build them with ObjectsFromJSON to choose it.
type ChatArgs struct {
	Messages       []Message   `msgpack:"messages"`
	Tools          Objects     `msgpack:"tools,omitempty"`
	ToolChoice     *ToolChoice `msgpack:"tool_choice,omitempty"` // nil: auto
	Format         *Format     `msgpack:"format,omitempty"`      // nil: free text
	Sampling       *Sampling   `msgpack:"sampling,omitempty"`
	MaxTokens      *uint64     `msgpack:"max_tokens,omitempty"`
	Thinking       string      `msgpack:"thinking,omitempty"`
	ThinkingBudget uint64      `msgpack:"thinking_budget,omitempty"`
	Speculative    *bool       `msgpack:"speculative,omitempty"`
	Stop           []string    `msgpack:"stop,omitempty"`
	Session        string      `msgpack:"session,omitempty"`
	Priority       string      `msgpack:"priority,omitempty"`
	IfBusy         string      `msgpack:"if_busy,omitempty"`
}

// GenerateArgs asks for a raw completion of a prompt or of token ids.
type GenerateArgs struct {
	Prompt      *string   `msgpack:"prompt,omitempty"`
	IDs         []uint32  `msgpack:"ids,omitempty"`
	Format      *Format   `msgpack:"format,omitempty"` // nil: free text
	Sampling    *Sampling `msgpack:"sampling,omitempty"`
	MaxTokens   *uint64   `msgpack:"max_tokens,omitempty"`
	Speculative *bool     `msgpack:"speculative,omitempty"`
	Stop        []string  `msgpack:"stop,omitempty"`
	Session     string    `msgpack:"session,omitempty"`
	Priority    string    `msgpack:"priority,omitempty"`
	IfBusy      string    `msgpack:"if_busy,omitempty"`
}

// Priorities.
const (
	PriorityInteractive = "interactive"
	PriorityBackground  = "background"
)

// What a generation does when the model's memory budget cannot hold it now
// (if_busy): wait in the queue (queued events report its position), or get
// busy at once.
const (
	IfBusyWait = "wait"
	IfBusyFail = "busy"
)

// TokenEvent is the data of a "token" event. Text is the model's text as
// written; in a chat, Reasoning, Content, ToolCalls and Diagnostics are
// what that text completed once parsed (docs/PROTOCOL.md §5).
type TokenEvent struct {
	Text        string       `msgpack:"text" json:"text"`
	IDs         []uint32     `msgpack:"ids" json:"ids"`
	TMS         float64      `msgpack:"t_ms" json:"t_ms"`
	Reasoning   string       `msgpack:"reasoning,omitempty" json:"reasoning,omitempty"`
	Content     string       `msgpack:"content,omitempty" json:"content,omitempty"`
	ToolCalls   []ToolCall   `msgpack:"tool_calls,omitempty" json:"tool_calls,omitempty"`
	Diagnostics []Diagnostic `msgpack:"diagnostics,omitempty" json:"diagnostics,omitempty"`
}

// ToolCall is one call the model made, parsed: Index counts the reply's
// calls from 0, ID is the daemon's name for it (a tool message's
// tool_call_id), Arguments an object in the order the model wrote its keys.
type ToolCall struct {
	Index     uint64 `msgpack:"index" json:"index"`
	ID        string `msgpack:"id" json:"id"`
	Name      string `msgpack:"name" json:"name"`
	Arguments Object `msgpack:"arguments" json:"arguments"`
}

// Object is the call as a message's tool_calls entry takes it back, in
// the shape chat templates read: {"id", "type": "function", "function":
// {"name", "arguments"}}, the arguments' key order kept.
func (c ToolCall) Object() (Object, error) {
	fn, err := ObjectOf("name", c.Name, "arguments", c.Arguments)
	if err != nil {
		return Object{}, err
	}
	return ObjectOf("id", c.ID, "type", "function", "function", fn)
}

// Diagnostic kinds: what in the model's output did not parse.
const (
	// DiagMalformedToolCall: a <tool_call> block that did not parse; Text
	// is its verbatim text, which is delivered as content.
	DiagMalformedToolCall = "malformed_tool_call"
	// DiagTruncatedToolCall: the output ended inside a tool call (at
	// max_tokens, say); Text is what was written of it, delivered as content.
	DiagTruncatedToolCall = "truncated_tool_call"
	// DiagToolCallArgument: a call was parsed, but a parameter value did not
	// match the type its tool's schema declares and was kept as a string.
	DiagToolCallArgument = "tool_call_argument"
	// DiagTruncatedReasoning: the output ended inside the reasoning.
	DiagTruncatedReasoning = "truncated_reasoning"
)

// Diagnostic says why part of the model's output was not parsed as meant.
// Nothing is dropped: the text it concerns is in the content.
type Diagnostic struct {
	Kind    string `msgpack:"kind" json:"kind"`
	Message string `msgpack:"message" json:"message"`
	Text    string `msgpack:"text,omitempty" json:"text,omitempty"`
}

// Usage accounts for one generation.
type Usage struct {
	PromptTokens    uint64   `msgpack:"prompt_tokens" json:"prompt_tokens"`
	CachedTokens    uint64   `msgpack:"cached_tokens" json:"cached_tokens"`
	GeneratedTokens uint64   `msgpack:"generated_tokens" json:"generated_tokens"`
	TTFTMS          float64  `msgpack:"ttft_ms" json:"ttft_ms"`
	TokensPerS      float64  `msgpack:"tokens_per_s" json:"tokens_per_s"`
	Acceptance      []uint64 `msgpack:"acceptance" json:"acceptance"`
}

// Finish reasons.
const (
	FinishStop       = "stop"
	FinishLength     = "length"
	FinishStopString = "stop_string"
	// FinishToolCalls: a chat turn that ended (stop token) having called
	// tools; the caller runs them and sends the results back.
	FinishToolCalls = "tool_calls"
)

// GenerationResult is the reply to chat and generate. Text is the model's
// text as written; Content, Reasoning, ToolCalls and Diagnostics are a
// chat's parsed output (for generate, Content is Text and the rest absent).
type GenerationResult struct {
	Text         string       `msgpack:"text" json:"text"`
	Content      string       `msgpack:"content" json:"content"`
	Reasoning    string       `msgpack:"reasoning,omitempty" json:"reasoning,omitempty"`
	ToolCalls    []ToolCall   `msgpack:"tool_calls,omitempty" json:"tool_calls,omitempty"`
	Diagnostics  []Diagnostic `msgpack:"diagnostics,omitempty" json:"diagnostics,omitempty"`
	FinishReason string       `msgpack:"finish_reason" json:"finish_reason"`
	Usage        Usage        `msgpack:"usage" json:"usage"`
	Revision     string       `msgpack:"revision" json:"revision"`
	Context      uint64       `msgpack:"context" json:"context"`
	Session      string       `msgpack:"session,omitempty" json:"session,omitempty"`
}

// Message is the assistant turn this reply stands for, to send back in a
// later chat: content, reasoning and the tool calls (as ToolCall.Object).
func (r *GenerationResult) Message() (Message, error) {
	m := Message{Role: "assistant", Content: r.Content, Reasoning: r.Reasoning}
	for _, c := range r.ToolCalls {
		o, err := c.Object()
		if err != nil {
			return Message{}, err
		}
		m.ToolCalls = append(m.ToolCalls, o)
	}
	return m, nil
}

// SessionArgs names a session.
type SessionArgs struct {
	Session string `msgpack:"session"`
}

// SessionResult names a new session.
type SessionResult struct {
	Session string `msgpack:"session" json:"session"`
}

// CancelArgs names the request to cancel.
type CancelArgs struct {
	ID uint64 `msgpack:"id"`
}

// StateEvent is the data of a "state" event.
type StateEvent struct {
	State  string  `msgpack:"state" json:"state"`
	Reason string  `msgpack:"reason" json:"reason"`
	TMS    float64 `msgpack:"t_ms" json:"t_ms"`
}

// Daemon states reported by status and subscribe.
const (
	StateDownloading = "downloading"
	StateVerifying   = "verifying"
	StateLoading     = "loading"
	StateReady       = "ready"
	StateUpdating    = "updating"
	StateUnavailable = "unavailable"
	// The model is installed but not in memory (keep-alive, unload,
	// pressure); the next request loads it.
	StateUnloaded  = "unloaded"
	StateUnloading = "unloading"
)

// ConfigValues is the effective configuration reported by config.get.
type ConfigValues struct {
	MaxFrame            uint64 `msgpack:"max_frame" json:"max_frame"`
	MaxDepth            uint64 `msgpack:"max_depth" json:"max_depth"`
	FrameTimeoutMS      uint64 `msgpack:"frame_timeout_ms" json:"frame_timeout_ms"`
	WriteTimeoutMS      uint64 `msgpack:"write_timeout_ms" json:"write_timeout_ms"`
	SlowReaderTimeoutMS uint64 `msgpack:"slow_reader_timeout_ms" json:"slow_reader_timeout_ms"`
	EventQueue          uint64 `msgpack:"event_queue" json:"event_queue"`
	Slots               uint64 `msgpack:"slots" json:"slots"`
	MaxQueue            uint64 `msgpack:"max_queue" json:"max_queue"`
	PerCaller           uint64 `msgpack:"per_caller" json:"per_caller"`
	PerUID              uint64 `msgpack:"per_uid" json:"per_uid"`
	SessionsPerConn     uint64 `msgpack:"sessions_per_connection" json:"sessions_per_connection"`
	SessionsPerUID      uint64 `msgpack:"sessions_per_uid" json:"sessions_per_uid"`
	AdminGroup          string `msgpack:"admin_group" json:"admin_group"`
	Socket              string `msgpack:"socket" json:"socket"`
	HelloTimeoutMS      uint64 `msgpack:"hello_timeout_ms" json:"hello_timeout_ms"`
	IdleTimeoutMS       uint64 `msgpack:"idle_timeout_ms" json:"idle_timeout_ms"`
	MaxConns            uint64 `msgpack:"max_conns" json:"max_conns"`
	ConnsPerUID         uint64 `msgpack:"conns_per_uid" json:"conns_per_uid"`
	StreamsPerConn      uint64 `msgpack:"streams_per_conn" json:"streams_per_conn"`
	// KeepAliveMS is the residency keep-alive: 0 unloads as soon as the
	// model is idle, -1 never; absent (nil) when the served model is
	// always loaded.
	KeepAliveMS *int64 `msgpack:"keep_alive_ms,omitempty" json:"keep_alive_ms,omitempty"`
	// File is the config file the daemon follows; absent without --config.
	File string `msgpack:"file,omitempty" json:"file,omitempty"`
}

// ConfigSetArgs sets one key of the daemon's config file: Key is the
// dotted key of docs/CONFIG.md ("keep_alive", "limits.per_caller") and
// Value its value as the file would hold it ("5m", 8, ["alice"]).
type ConfigSetArgs struct {
	Key   string `msgpack:"key" json:"key"`
	Value any    `msgpack:"value" json:"value"`
}

// ConfigSetResult is the result of config.set: the keys whose values
// changed, and those of them that only take effect after a restart.
type ConfigSetResult struct {
	Changed       []string `msgpack:"changed" json:"changed"`
	RestartNeeded []string `msgpack:"restart_needed" json:"restart_needed"`
}

// ConfigGetResult is the result of config.get.
type ConfigGetResult struct {
	Config ConfigValues `msgpack:"config" json:"config"`
}

// Empty is the result of ops that return nothing but success.
type Empty struct{}

// EventProgress is a pull's or update.apply's progress event.
const EventProgress = "progress"

// ProgressEvent is one step of a download (the bundle store's events):
// kind is one of resolved, plan, file_start, progress, file_done, retry,
// verify, installed, lock_wait.
type ProgressEvent struct {
	Kind    string `msgpack:"kind" json:"kind"`
	Commit  string `msgpack:"commit,omitempty" json:"commit,omitempty"`
	Path    string `msgpack:"path,omitempty" json:"path,omitempty"`
	Done    int64  `msgpack:"done_bytes,omitempty" json:"done_bytes,omitempty"`
	Total   int64  `msgpack:"total_bytes,omitempty" json:"total_bytes,omitempty"`
	Files   int    `msgpack:"files,omitempty" json:"files,omitempty"`
	Message string `msgpack:"message,omitempty" json:"message,omitempty"`
}

// RevisionArgs name a revision to pull or update to (default: the tracked one).
type RevisionArgs struct {
	Revision string `msgpack:"revision"`
}

// PullResult is the result of pull and update.apply.
type PullResult struct {
	Repo             string `msgpack:"repo" json:"repo"`
	Commit           string `msgpack:"commit" json:"commit"`
	AlreadyInstalled bool   `msgpack:"already_installed" json:"already_installed"`
	Files            uint64 `msgpack:"files" json:"files"`
	Bytes            uint64 `msgpack:"bytes" json:"bytes"`
	DownloadedBytes  uint64 `msgpack:"downloaded_bytes" json:"downloaded_bytes"`
	Serving          string `msgpack:"serving" json:"serving"`   // the revision new requests get
	Previous         string `msgpack:"previous" json:"previous"` // kept for update.rollback
}

// VerifyArgs ask for a full verify (hash every file) or a fast one.
type VerifyArgs struct {
	Full bool `msgpack:"full"`
}

// VerifyResult is the result of verify: status PASS or FAIL, and each problem.
type VerifyResult struct {
	Repo          string   `msgpack:"repo" json:"repo"`
	Commit        string   `msgpack:"commit" json:"commit"`
	Status        string   `msgpack:"status" json:"status"`
	VerifiedFiles uint64   `msgpack:"verified_files" json:"verified_files"`
	HashedBytes   uint64   `msgpack:"hashed_bytes" json:"hashed_bytes"`
	Failures      []string `msgpack:"failures" json:"failures"`
}

// UpdateCheckResult is the result of update.check.
type UpdateCheckResult struct {
	Repo          string   `msgpack:"repo" json:"repo"`
	Current       string   `msgpack:"current" json:"current"`
	Latest        string   `msgpack:"latest" json:"latest"`
	UpToDate      bool     `msgpack:"up_to_date" json:"up_to_date"`
	ChangedFiles  []string `msgpack:"changed_files" json:"changed_files"`
	DownloadBytes uint64   `msgpack:"download_bytes" json:"download_bytes"`
	TotalBytes    uint64   `msgpack:"total_bytes" json:"total_bytes"`
}

// UnloadArgs: Force cancels running generations instead of answering busy.
type UnloadArgs struct {
	Force bool `msgpack:"force"`
}

// PinArgs pin (Pinned absent or true) or unpin the model.
type PinArgs struct {
	Pinned *bool `msgpack:"pinned,omitempty"`
}

// ResidencyResult is what load, unload and pin answer: where the model is now.
type ResidencyResult struct {
	State  string `msgpack:"state" json:"state"`
	Reason string `msgpack:"reason,omitempty" json:"reason,omitempty"`
	Pinned bool   `msgpack:"pinned" json:"pinned"`
}

// RollbackResult is the result of update.rollback: where the model is, the
// revision served now, and (with a bundle store) the one it replaced,
// which a second rollback returns to.
type RollbackResult struct {
	State    string `msgpack:"state" json:"state"`
	Reason   string `msgpack:"reason,omitempty" json:"reason,omitempty"`
	Pinned   bool   `msgpack:"pinned" json:"pinned"`
	Revision string `msgpack:"revision" json:"revision"`
	Previous string `msgpack:"previous,omitempty" json:"previous,omitempty"`
}

// GCArgs: partials also drops interrupted downloads.
type GCArgs struct {
	Partials bool `msgpack:"partials"`
}

// GCResult is the result of gc.
type GCResult struct {
	RemovedSnapshots []string `msgpack:"removed_snapshots" json:"removed_snapshots"`
	RemovedBlobs     uint64   `msgpack:"removed_blobs" json:"removed_blobs"`
	FreedBytes       uint64   `msgpack:"freed_bytes" json:"freed_bytes"`
}
