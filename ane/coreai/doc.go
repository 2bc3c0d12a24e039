// Package coreai runs the published ANEMLL Forge target through Apple's
// Core AI: the chunk driver that implements ane.Engine over the bundle's
// chunk and head packages (a Model shared by every session, an Engine per
// session, parking). The bridge binding is ane/coreai/cai, the DFlash2
// drafter's driver ane/coreai/draft, the hardware smoke test
// ane/coreai/smoke. On Linux it runs over the stand-in bridge
// (ane/coreai/standin); nothing here has run on a Mac. docs/COREAI.md
// describes it.
package coreai
