package modelbackend

import "github.com/forgedaemon/forged/ane/speculative"

// SetRequestDrafter replaces the per-request drafter (prompt lookup), so a
// test can serve with a drafter of known behaviour.
func SetRequestDrafter(b *Backend, f func(prompt []int) speculative.Drafter) { b.perRequest = f }
