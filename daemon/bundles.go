package daemon

import (
	"context"
	"errors"
	"fmt"

	"github.com/forgedaemon/forged/daemon/state"
	"github.com/forgedaemon/forged/daemon/updater"
)

// Bundles is state.Bundles: the bundle store repository a daemon serves.
type Bundles = state.Bundles

// ServeStore serves b's repository until ctx ends. An installed repository
// starts unloaded (the first request or load loads it); one not installed
// yet is state unavailable, saying how to pull it.
func (s *Server) ServeStore(ctx context.Context, b Bundles) (*Residency, error) {
	src, err := state.ServeStore(ctx, b, s.log, s.EnableResidency)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.store = src
	s.mu.Unlock()
	return src.Residency(), nil
}

// RunUpdates runs the automatic update loop over the served bundle store
// until ctx ends (docs/RESIDENCY.md): policy is read every round; a receive
// on wake (may be nil) checks at once, and a repository not installed yet
// is installed at once (if update.auto). Every round is logged, and applied
// updates and failures are published as state events.
func (s *Server) RunUpdates(ctx context.Context, policy func() updater.Policy, wake <-chan struct{}) error {
	src := view{s}.Store()
	if src == nil {
		return errors.New("automatic updates need a bundle store (forged run --repo)")
	}
	cur, err := src.Bundles().Store.Current(src.Bundles().Repo)
	if err != nil {
		return err
	}
	l := &updater.Loop{Policy: policy, Source: src, Log: s.log, Wake: wake, Immediate: cur.Commit == "", OnStep: func(r updater.Round) {
		switch r.Step {
		case updater.StepApplied:
			s.note(fmt.Sprintf("automatic update: now serving %s", r.Commit))
		case updater.StepFailed:
			s.note(fmt.Sprintf("automatic update failed (retry in %s): %v", r.Next, r.Err))
		}
	}}
	l.Run(ctx)
	return nil
}
