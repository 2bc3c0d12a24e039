package ops

import (
	"cmp"
	"context"
	"fmt"
	"runtime/debug"
	"runtime/metrics"
	"slices"
	"time"
	"unicode"

	"github.com/forgedaemon/forged/client/wire"
	"github.com/forgedaemon/forged/daemon/backend"
	"github.com/forgedaemon/forged/daemon/state"
	"github.com/forgedaemon/forged/internal/version"
)

// handler runs one op. Streaming handlers send events with c.event before
// returning; the returned value or error becomes the reply.
type handler func(c *conn, ctx context.Context, req wire.Request) (any, error)

// handlers are the daemon's handler for each op of the registry
// (wire.Ops), which says whether it is admin, streaming and what enables it.
var handlers map[string]handler

func init() {
	handlers = map[string]handler{
		wire.OpHello:          (*conn).opHello,
		wire.OpStatus:         (*conn).opStatus,
		wire.OpModels:         (*conn).opModels,
		wire.OpTokenize:       (*conn).opTokenize,
		wire.OpDetokenize:     (*conn).opDetokenize,
		wire.OpSessionOpen:    (*conn).opSessionOpen,
		wire.OpSessionClose:   (*conn).opSessionClose,
		wire.OpCancel:         (*conn).opCancel,
		wire.OpChat:           (*conn).opChat,
		wire.OpGenerate:       (*conn).opGenerate,
		wire.OpSubscribe:      (*conn).opSubscribe,
		wire.OpConfigGet:      (*conn).opConfigGet,
		wire.OpShutdown:       (*conn).opShutdown,
		wire.OpLoad:           (*conn).opLoad,
		wire.OpUnload:         (*conn).opUnload,
		wire.OpPin:            (*conn).opPin,
		wire.OpUpdateRollback: (*conn).opRollback,
		wire.OpConfigSet:      (*conn).opConfigSet,
		wire.OpPull:           (*conn).opPull,
		wire.OpUpdateApply:    (*conn).opPull,
		wire.OpVerify:         (*conn).opVerify,
		wire.OpUpdateCheck:    (*conn).opUpdateCheck,
		wire.OpGC:             (*conn).opGC,
		wire.OpTokenCreate:    (*conn).opTokenCreate,
		wire.OpTokenList:      (*conn).opTokenList,
		wire.OpTokenRevoke:    (*conn).opTokenRevoke,
	}
}

func (c *conn) handle(req wire.Request) {
	spec, known := wire.LookupOp(req.Op)
	run := handlers[req.Op]
	if c.clientName() == "" && req.Op != wire.OpHello {
		c.replyErr(req.ID, wire.Errorf(wire.CodeProtocolVersion, "the first request must be hello, got %q", req.Op))
		return
	}
	if !known || run == nil {
		c.replyErr(req.ID, wire.Errorf(wire.CodeBadRequest, "unknown op %q", req.Op))
		return
	}
	if spec.Admin {
		if !c.s.Authz().IsAdmin(c.peer) {
			c.log.Warn("admin op refused", "op", req.Op, "client", c.clientName())
			c.replyErr(req.ID, wire.Errorf(wire.CodeUnauthorized, "%s is an admin operation; uid %d is not root, the daemon's user or in the admin group", req.Op, c.peer.UID))
			return
		}
		c.log.Info("admin op", "op", req.Op, "client", c.clientName())
	} else if req.Op != wire.OpHello && !c.s.Authz().MayUseApps(c.peer) {
		c.replyErr(req.ID, wire.Errorf(wire.CodeUnauthorized, "uid %d is not allowed to use this daemon", c.peer.UID))
		return
	}
	if err := spec.CheckArgKeys(req.Args); err != nil {
		c.replyErr(req.ID, err)
		return
	}
	// Replies are matched to requests by id: one id is in flight once,
	// whatever the ops (a non-streaming request runs here, on the reader,
	// so only streams can be in flight beside it).
	c.mu.Lock()
	_, dup := c.inflight[req.ID]
	streams := len(c.inflight)
	c.mu.Unlock()
	if dup {
		c.replyErr(req.ID, wire.Errorf(wire.CodeBadRequest, "request id %d is already in flight on this connection", req.ID))
		return
	}
	if !spec.Streaming {
		res, err := c.run(run, c.ctx, req)
		c.reply(req.ID, res, err)
		return
	}
	if max := c.s.cfg.MaxStreams; streams >= max {
		c.replyErr(req.ID, wire.Errorf(wire.CodeBusy, "%s: this connection already has %d streaming requests in flight, the limit (limits.streams_per_conn); cancel or finish one first", req.Op, max))
		return
	}
	ctx, cancel := context.WithCancelCause(c.ctx)
	c.mu.Lock()
	c.inflight[req.ID] = cancel
	c.mu.Unlock()
	c.reqs.Go(func() {
		res, err := c.run(run, ctx, req)
		if err != nil && ctx.Err() != nil {
			err = context.Cause(ctx) // report why it stopped (cancelled), not how
		}
		c.mu.Lock()
		delete(c.inflight, req.ID)
		c.mu.Unlock()
		cancel(nil)
		c.reply(req.ID, res, err)
	})
}

// run calls a handler, turning a panic (a bug in a handler or a backend)
// into an internal error for that request instead of a dead daemon.
func (c *conn) run(h handler, ctx context.Context, req wire.Request) (res any, err error) {
	defer func() {
		if p := recover(); p != nil {
			c.log.Error("handler panic", "op", req.Op, "panic", p, "stack", string(debug.Stack()))
			res, err = nil, wire.Errorf(wire.CodeInternal, "%s failed: %v", req.Op, p)
		}
	}()
	return h(c, ctx, req)
}

// event sends one event of a streaming request.
func (c *conn) event(id uint64, name string, data any) error {
	return c.send(wire.Event{ID: id, Event: name, Data: data}, nil)
}

func (c *conn) opHello(_ context.Context, req wire.Request) (any, error) {
	var a wire.HelloArgs
	if err := wire.DecodeArgs(req.Op, req.Args, &a); err != nil {
		return nil, err
	}
	if a.Protocol != wire.ProtocolVersion {
		return nil, wire.Errorf(wire.CodeProtocolVersion, "protocol %d is not supported; this daemon speaks protocol %d", a.Protocol, wire.ProtocolVersion)
	}
	if a.Client == "" || len(a.Client) > 128 || containsControl(a.Client) {
		return nil, wire.Errorf(wire.CodeBadRequest, "hello: args.client must be 1–128 bytes without control characters")
	}
	c.mu.Lock()
	if c.client != "" {
		c.mu.Unlock()
		return nil, wire.Errorf(wire.CodeBadRequest, "hello was already sent on this connection")
	}
	c.client = a.Client
	c.mu.Unlock()
	c.Greeted()
	c.sessions.SetClient(a.Client)
	state, _, _ := c.s.CurrentState()
	return wire.HelloResult{
		Daemon: daemonVersion, Protocol: wire.ProtocolVersion, Capabilities: c.s.Capabilities(),
		Bundle: c.s.Backend().Model().Bundle, State: state, MaxFrame: uint64(c.s.cfg.Limits.MaxFrame),
		Backend: backend.Info(c.s.Backend()),
	}, nil
}

func containsControl(s string) bool {
	return slices.ContainsFunc([]rune(s), unicode.IsControl)
}

func (c *conn) opStatus(context.Context, wire.Request) (any, error) {
	s := c.s
	state, reason, _ := s.CurrentState()
	queued, running, slots := s.sched.Counts()
	res := wire.StatusResult{
		Daemon: daemonVersion, Protocol: wire.ProtocolVersion, State: state, Reason: reason,
		Bundle: s.Backend().Model().Bundle, UptimeMS: uint64(time.Since(s.started).Milliseconds()),
		Queued: uint64(queued), Running: uint64(running), Slots: uint64(slots),
		Sessions: []wire.SessionInfo{}, Requests: []wire.RequestInfo{}, Memory: s.Backend().Memory(),
		Backend: backend.Info(s.Backend()),
	}
	res.Connections = uint64(s.Connections())
	s.mu.Lock()
	for g := range s.gens {
		st := "queued"
		if g.running.Load() {
			st = "running"
		}
		res.Requests = append(res.Requests, wire.RequestInfo{ID: g.id, Seq: g.seq, UID: g.peer.UID, PID: g.peer.PID, Client: g.client,
			Op: g.op, Priority: g.priority, State: st, AgeMS: uint64(time.Since(g.received).Milliseconds()), Generated: g.generated.Load()})
	}
	s.mu.Unlock()
	slices.SortFunc(res.Requests, func(a, b wire.RequestInfo) int { return cmp.Compare(a.Seq, b.Seq) })
	list, total := s.sessions.Infos(c.peer.UID, statusSessions)
	res.Sessions = append(res.Sessions, list...)
	res.SessionsTotal = uint64(total)
	res.Memory.GoHeap = goHeapBytes()
	if est, ok := c.s.MemoryEstimate(); ok {
		res.MemoryEstimate = &est
	}
	if sp, ok := s.Backend().(interface{ Speculation() string }); ok {
		res.Speculation = sp.Speculation()
	}
	return res, nil
}

// statusSessions is state.StatusSessions (status's local "state" is the
// daemon state's name).
const statusSessions = state.StatusSessions

// daemonVersion is read once: version.Get parses the build info.
var daemonVersion = version.Get().Version

// goHeapBytes reads the live heap without runtime.ReadMemStats, which stops
// the world on every status call.
func goHeapBytes() uint64 {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(sample)
	if sample[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return sample[0].Value.Uint64()
}

func (c *conn) opModels(context.Context, wire.Request) (any, error) { return c.s.Models(), nil }

func (c *conn) opTokenize(ctx context.Context, req wire.Request) (any, error) {
	var a wire.TokenizeArgs
	if err := wire.DecodeArgs(req.Op, req.Args, &a); err != nil {
		return nil, err
	}
	_, done, err := c.s.UseModel(ctx) // an unloaded model loads again
	if err != nil {
		return nil, err
	}
	defer done()
	ids, err := c.call().prepare(ctx, func() ([]int, error) { return c.s.Backend().Tokenize(a.Text) })
	if err != nil {
		return nil, err
	}
	return wire.TokenizeResult{IDs: toWireIDs(ids)}, nil
}

func (c *conn) opDetokenize(ctx context.Context, req wire.Request) (any, error) {
	var a wire.DetokenizeArgs
	if err := wire.DecodeArgs(req.Op, req.Args, &a); err != nil {
		return nil, err
	}
	_, done, err := c.s.UseModel(ctx) // an unloaded model loads again
	if err != nil {
		return nil, err
	}
	defer done()
	text, err := c.s.Backend().Detokenize(fromWireIDs(a.IDs))
	if err != nil {
		return nil, err
	}
	return wire.DetokenizeResult{Text: text}, nil
}

func (c *conn) opCancel(_ context.Context, req wire.Request) (any, error) {
	var a wire.CancelArgs
	if err := wire.DecodeArgs(req.Op, req.Args, &a); err != nil {
		return nil, err
	}
	c.mu.Lock()
	cancel, ok := c.inflight[a.ID]
	c.mu.Unlock()
	if !ok {
		return nil, wire.Errorf(wire.CodeNotFound, "cancel: no request %d in flight on this connection", a.ID)
	}
	cancel(wire.Errorf(wire.CodeCancelled, "request %d was cancelled by the client", a.ID))
	return wire.Empty{}, nil
}

func (c *conn) opSubscribe(ctx context.Context, req wire.Request) (any, error) {
	if err := wire.DecodeArgs(req.Op, req.Args, &wire.Empty{}); err != nil {
		return nil, err
	}
	start := time.Now()
	now, changed := c.s.SubscribeState()
	seq, pending := now.Seq, []state.Record{now}
	for {
		for _, r := range pending {
			ev := wire.StateEvent{State: r.State, Reason: r.Reason, TMS: float64(time.Since(start).Microseconds()) / 1000}
			if err := c.event(req.ID, wire.EventState, ev); err != nil {
				return nil, err
			}
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
		pending, seq, changed = c.s.StatesSince(seq)
	}
}

func (c *conn) opConfigGet(context.Context, wire.Request) (any, error) {
	return wire.ConfigGetResult{Config: c.s.ConfigValues()}, nil
}

func (c *conn) opShutdown(_ context.Context, req wire.Request) (any, error) {
	if err := wire.DecodeArgs(req.Op, req.Args, &wire.Empty{}); err != nil {
		return nil, err
	}
	// Reply first (and wait for it to be written), then stop the server.
	c.sendAndWait(wire.Reply{ID: req.ID, OK: true, Result: wire.Empty{}})
	c.s.log.Info("shutdown requested", "uid", c.peer.UID, "pid", c.peer.PID, "client", c.clientName())
	c.s.Shutdown()
	return nil, errAlreadyReplied
}

func toWireIDs(ids []int) []uint32 {
	out := make([]uint32, len(ids))
	for i, id := range ids {
		out[i] = uint32(id)
	}
	return out
}

func fromWireIDs(ids []uint32) []int {
	out := make([]int, len(ids))
	for i, id := range ids {
		out[i] = int(id)
	}
	return out
}

var errAlreadyReplied = fmt.Errorf("already replied")
