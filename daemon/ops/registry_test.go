package ops

import (
	"testing"

	"github.com/forgedaemon/forged/client/wire"
)

// TestRegistryHandlers: every op of the registry has a handler and every
// handler an entry in the registry.
func TestRegistryHandlers(t *testing.T) {
	for _, o := range wire.Ops {
		if handlers[o.Name] == nil {
			t.Errorf("op %q is in wire.Ops but has no handler", o.Name)
		}
	}
	for name := range handlers {
		if _, ok := wire.LookupOp(name); !ok {
			t.Errorf("handler for %q, an op wire.Ops does not list", name)
		}
	}
	if len(wire.Ops) != len(handlers) {
		t.Errorf("%d ops in the registry, %d handlers", len(wire.Ops), len(handlers))
	}
}

// TestCapabilitiesFromRegistry: with every feature present, hello lists each
// capability name once, every op but hello under one.
func TestCapabilitiesFromRegistry(t *testing.T) {
	all := wire.Capabilities(func(wire.Feature) bool { return true })
	want := []string{"status", "models", "tokenize", "detokenize", "chat", "generate", "session", "cancel", "subscribe",
		"config.get", "shutdown", "load", "unload", "pin", "update.rollback", "pull", "verify", "update.check",
		"update.apply", "gc", "config.set", "token"}
	if len(all) != len(want) {
		t.Fatalf("capabilities %v, want %v", all, want)
	}
	for i := range want {
		if all[i] != want[i] {
			t.Fatalf("capabilities %v, want %v", all, want)
		}
	}
	none := wire.Capabilities(func(wire.Feature) bool { return false })
	if len(none) != 11 {
		t.Errorf("with no features: %v, want the 11 always served", none)
	}
}
