package client

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/forgedaemon/forged/client/wire"
	"github.com/forgedaemon/forged/internal/paths"
	"github.com/vmihailenco/msgpack/v5"
)

// Error is a failed reply from the daemon; Code is one of the wire.Code* constants.
type Error = wire.Error

// ErrClosed is returned for calls on a closed or broken connection.
var ErrClosed = errors.New("forged connection closed")

// DefaultSocketPath is where an app finds forged: $FORGE_SOCKET when it is
// set; otherwise the first socket that exists of the user's own daemon and
// the system daemon, in that order (root: the system's only), else the
// user's (paths.SocketLookup decides the order).
func DefaultSocketPath() string {
	lookup := paths.SocketLookup(paths.Current())
	for _, p := range lookup {
		if fi, err := os.Stat(p); err == nil && fi.Mode()&fs.ModeSocket != 0 {
			return p
		}
	}
	return lookup[0]
}

// Options configure a connection.
type Options struct {
	Name string // the app name sent in hello (default: the executable's name)
}

// Client is one connection to forged. It is safe for concurrent use;
// several requests may be in flight at once.
type Client struct {
	nc    net.Conn
	hello wire.HelloResult

	wmu sync.Mutex
	bw  *bufio.Writer

	nextID atomic.Uint64
	mu     sync.Mutex
	calls  map[uint64]*call
	err    error         // why the connection ended
	done   chan struct{} // closed when the reader stops
}

// incoming is any daemon message: a reply or an event.
type incoming struct {
	ID     uint64             `msgpack:"id"`
	OK     bool               `msgpack:"ok"`
	Result msgpack.RawMessage `msgpack:"result"`
	Error  *wire.Error        `msgpack:"error"`
	Event  string             `msgpack:"event"`
	Data   msgpack.RawMessage `msgpack:"data"`

	connErr error // set instead of a reply when the connection ended
}

type call struct {
	events chan incoming // nil for calls without events
	reply  chan incoming // buffered 1
}

// Dial connects to the daemon at path (DefaultSocketPath when empty),
// checks that the process listening there is root, this user or
// $FORGE_DAEMON_UID before sending anything (docs/PROTOCOL.md §1), and
// performs the hello handshake. When nothing listens at path the error is a
// *NotRunningError that says how to start forged.
func Dial(ctx context.Context, path string, opts Options) (*Client, error) {
	if path == "" {
		path = DefaultSocketPath()
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		if notListening(err) {
			return nil, notRunning(path, err)
		}
		return nil, fmt.Errorf("connect to forged at %s: %w", path, err)
	}
	nc := conn.(*net.UnixConn)
	if err := checkListener(nc, path); err != nil {
		nc.Close()
		return nil, err
	}
	c := &Client{nc: nc, bw: bufio.NewWriter(nc), calls: map[uint64]*call{}, done: make(chan struct{})}
	go c.readLoop()
	name := opts.Name
	if name == "" {
		name = filepath.Base(os.Args[0])
	}
	if err := c.call(ctx, wire.OpHello, wire.HelloArgs{Protocol: wire.ProtocolVersion, Client: name}, &c.hello); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// Hello returns what the daemon said about itself at connect time.
func (c *Client) Hello() wire.HelloResult { return c.hello }

// Close closes the connection; the daemon cancels this connection's requests.
func (c *Client) Close() error {
	err := c.nc.Close()
	<-c.done
	return err
}

func (c *Client) readLoop() {
	defer close(c.done)
	br := bufio.NewReaderSize(c.nc, 64<<10)
	var err error
	for {
		var body []byte
		if body, err = wire.ReadFrame(br, wire.MaxDaemonFrame); err != nil {
			break
		}
		if err = wire.Validate(body, wire.Limits{MaxFrame: wire.MaxDaemonFrame, MaxDepth: 64}); err != nil {
			break
		}
		var m incoming
		if err = msgpack.NewDecoder(bytes.NewReader(body)).Decode(&m); err != nil {
			break
		}
		c.dispatch(m)
	}
	c.mu.Lock()
	if errors.Is(err, net.ErrClosed) {
		c.err = ErrClosed
	} else {
		c.err = fmt.Errorf("%w: %v", ErrClosed, err)
	}
	calls := c.calls
	c.calls = map[uint64]*call{}
	c.mu.Unlock()
	for _, cl := range calls {
		cl.reply <- incoming{connErr: c.err}
	}
}

func (c *Client) dispatch(m incoming) {
	c.mu.Lock()
	cl := c.calls[m.ID]
	if cl != nil && m.Event == "" {
		delete(c.calls, m.ID)
	}
	c.mu.Unlock()
	if cl == nil {
		return // a reply to a call we gave up on, or id 0 for a frame error
	}
	if m.Event != "" {
		if cl.events != nil {
			cl.events <- m // blocks the reader: backpressure until the app reads its stream
		}
		return
	}
	cl.reply <- m
}

// start registers a call and sends its request.
func (c *Client) start(op string, args any, streaming bool) (uint64, *call, error) {
	id := c.nextID.Add(1)
	cl := &call{reply: make(chan incoming, 1)}
	if streaming {
		cl.events = make(chan incoming, 64)
	}
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		return 0, nil, err
	}
	c.calls[id] = cl
	c.mu.Unlock()
	frame, err := wire.Marshal(wire.OutRequest{ID: id, Op: op, Args: args})
	if err == nil {
		c.wmu.Lock()
		if _, err = c.bw.Write(frame); err == nil {
			err = c.bw.Flush()
		}
		c.wmu.Unlock()
	}
	if err != nil {
		c.forget(id)
		return 0, nil, fmt.Errorf("%w: %v", ErrClosed, err)
	}
	return id, cl, nil
}

func (c *Client) forget(id uint64) {
	c.mu.Lock()
	delete(c.calls, id)
	c.mu.Unlock()
}

// call runs one request without events and decodes its result into out.
func (c *Client) call(ctx context.Context, op string, args, out any) error {
	id, cl, err := c.start(op, args, false)
	if err != nil {
		return err
	}
	select {
	case m := <-cl.reply:
		return decodeReply(m, out)
	case <-ctx.Done():
		c.forget(id)
		return ctx.Err()
	}
}

func decodeReply(m incoming, out any) error {
	if m.connErr != nil {
		return m.connErr
	}
	if !m.OK {
		if m.Error == nil {
			return &wire.Error{Code: wire.CodeInternal, Message: "reply with neither result nor error"}
		}
		return m.Error
	}
	if out == nil || len(m.Result) == 0 {
		return nil
	}
	if err := msgpack.Unmarshal(m.Result, out); err != nil {
		return fmt.Errorf("decode result: %w", err)
	}
	return nil
}

// Status returns the daemon's state, queue, sessions and memory.
func (c *Client) Status(ctx context.Context) (*wire.StatusResult, error) {
	var r wire.StatusResult
	return &r, c.call(ctx, wire.OpStatus, nil, &r)
}

// Models lists the served models.
func (c *Client) Models(ctx context.Context) ([]wire.ModelInfo, error) {
	var r wire.ModelsResult
	return r.Models, c.call(ctx, wire.OpModels, nil, &r)
}

// Tokenize returns the token ids of text.
func (c *Client) Tokenize(ctx context.Context, text string) ([]uint32, error) {
	var r wire.TokenizeResult
	return r.IDs, c.call(ctx, wire.OpTokenize, wire.TokenizeArgs{Text: text}, &r)
}

// Detokenize returns the text of token ids.
func (c *Client) Detokenize(ctx context.Context, ids []uint32) (string, error) {
	var r wire.DetokenizeResult
	return r.Text, c.call(ctx, wire.OpDetokenize, wire.DetokenizeArgs{IDs: ids}, &r)
}

// OpenSession starts a conversation whose state carries over between turns.
func (c *Client) OpenSession(ctx context.Context) (string, error) {
	var r wire.SessionResult
	return r.Session, c.call(ctx, wire.OpSessionOpen, nil, &r)
}

// CloseSession frees a session.
func (c *Client) CloseSession(ctx context.Context, id string) error {
	return c.call(ctx, wire.OpSessionClose, wire.SessionArgs{Session: id}, nil)
}

// ConfigGet returns the daemon's effective configuration (admin).
func (c *Client) ConfigGet(ctx context.Context) (*wire.ConfigValues, error) {
	var r wire.ConfigGetResult
	return &r.Config, c.call(ctx, wire.OpConfigGet, nil, &r)
}

// Shutdown asks the daemon to stop (admin).
func (c *Client) Shutdown(ctx context.Context) error {
	return c.call(ctx, wire.OpShutdown, nil, nil)
}

// Admin runs any admin op (pull, verify, update.check, update.apply,
// update.rollback, load, unload, pin, gc, config.set) and decodes its
// result into out (which may be nil).
func (c *Client) Admin(ctx context.Context, op string, args, out any) error {
	if !wire.AdminOps[op] {
		return fmt.Errorf("%q is not an admin op", op)
	}
	return c.call(ctx, op, args, out)
}
