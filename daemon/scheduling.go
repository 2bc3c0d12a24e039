package daemon

import "github.com/forgedaemon/forged/daemon/scheduler"

// The scheduler lives in daemon/scheduler; these names keep callers unchanged.
type Scheduler = scheduler.Scheduler

// Priority classes, served strictly in this order.
const (
	Interactive = scheduler.Interactive
	Background  = scheduler.Background
)

// NewScheduler is scheduler.NewScheduler.
func NewScheduler(l scheduler.Limits) *Scheduler { return scheduler.NewScheduler(l) }
