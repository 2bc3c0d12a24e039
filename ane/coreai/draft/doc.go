// Package draft drives the published DFlash2 drafter package on Core AI
// through the bridge (ane/coreai/cai): a Model shared by sessions,
// a Drafter per session implementing speculative.Drafter (the ring of keys
// and values, the ctx64 and draft entries, the candidate selector walked on
// the host), parking. docs/COREAI.md describes it.
package draft
