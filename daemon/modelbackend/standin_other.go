//go:build !linux

package modelbackend

// attachStandIn does nothing off Linux: the bridge is Apple's Core AI
// through the Swift bridge (ane/coreai/cai/bridge), which computes itself.
func attachStandIn(string) error { return nil }
