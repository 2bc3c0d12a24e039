// Package coreai runs the published ANEMLL Forge bundle through Apple's
// Core AI: a purego binding of the Swift bridge's cai_* C ABI (abi.go),
// the chunk driver that implements ane.Engine over the bundle's chunk and
// head packages (a Model shared by every session, an Engine per session,
// parking), and the DFlash2 drafter driver. On Linux it runs over the
// stand-in bridge (ane/coreai/standin); nothing here has run on a Mac.
// docs/COREAI.md describes it.
package coreai
