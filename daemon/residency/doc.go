// Package residency is the daemon's memory and lifecycle policy, kept pure so
// it can be table-tested: the per-bundle state machine (absent → downloading
// → verifying → ready → loading → resident → unloading, and failed), the
// memory model (weights, per-session KV, recurrent state, scratch, drafter),
// context entry selection on the manifest's ladder, and admission against a
// budget of the machine's memory minus a reserve.
//
// Nothing here touches the OS or an engine: callers pass in the machine's
// memory (internal/sysinfo) and what is resident, and act on the decisions.
package residency
