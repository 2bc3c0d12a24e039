package modelbackend

import "github.com/forgedaemon/forged/ane/spec"

// SetRequestDrafter replaces the per-request drafter (prompt lookup), so a
// test can serve with a drafter of known behaviour.
func SetRequestDrafter(b *Backend, f func(prompt []int) spec.Drafter) { b.perRequest = f }
