package client

import (
	"context"

	"github.com/forgedaemon/forged/client/wire"
	"github.com/vmihailenco/msgpack/v5"
)

// Pull asks the daemon to install revision ("" for the tracked one) of its
// bundle and serve it (admin). progress, if not nil, gets each download
// event; cancelling ctx cancels the pull.
func (c *Client) Pull(ctx context.Context, revision string, progress func(wire.ProgressEvent)) (*wire.PullResult, error) {
	var r wire.PullResult
	return &r, c.progressCall(ctx, wire.OpPull, wire.RevisionArgs{Revision: revision}, progress, &r)
}

// UpdateApply is Pull for an update: the new revision is installed beside
// the served one and switched to when no generation is running (admin).
func (c *Client) UpdateApply(ctx context.Context, revision string, progress func(wire.ProgressEvent)) (*wire.PullResult, error) {
	var r wire.PullResult
	return &r, c.progressCall(ctx, wire.OpUpdateApply, wire.RevisionArgs{Revision: revision}, progress, &r)
}

// progressCall runs an op that streams progress events before its reply.
func (c *Client) progressCall(ctx context.Context, op string, args any, progress func(wire.ProgressEvent), out any) error {
	id, cl, err := c.start(op, args, true)
	if err != nil {
		return err
	}
	for {
		select {
		case m := <-cl.events:
			var ev wire.ProgressEvent
			if m.Event == wire.EventProgress && progress != nil && msgpack.Unmarshal(m.Data, &ev) == nil {
				progress(ev)
			}
		case m := <-cl.reply:
			return decodeReply(m, out)
		case <-ctx.Done():
			go c.call(context.Background(), wire.OpCancel, wire.CancelArgs{ID: id}, nil)
			go func() { // drain until the daemon's reply ends the request
				for {
					select {
					case <-cl.events:
					case <-cl.reply:
						return
					}
				}
			}()
			return ctx.Err()
		}
	}
}
