package modelbackend

import (
	"errors"
	"fmt"
	"testing"

	"github.com/forgedaemon/forged/ane/coreai/cai"
	"github.com/forgedaemon/forged/client/wire"
)

// TestChooseTable: auto over {darwin, linux} × {bridge loads, absent,
// wrong ABI} × {snapshot has coreai, export, both, neither}, each cell the
// backend chosen or the exact reason (with the fix) the bundle is
// unavailable.
func TestChooseTable(t *testing.T) {
	const path = "/opt/homebrew/opt/forged/lib/forged/libCoreAIBridge.dylib"
	tried := []string{"/a/libCoreAIBridge.dylib", path}
	bridges := map[string]Bridge{
		"loads":     {Path: path, Tried: tried, Release: "bridge-1"},
		"absent":    {Tried: tried, Err: fmt.Errorf("%w: not found", cai.ErrBridgeNotFound)},
		"wrong ABI": {Path: path, Tried: tried, Err: errors.New("coreai: bridge library " + path + " has ABI version 2, this build needs 1")},
	}
	contents := map[string]Contents{
		"coreai": {CoreAI: true}, "export": {Export: true}, "both": {CoreAI: true, Export: true}, "neither": {},
	}
	const (
		neither      = "the snapshot carries neither the Core AI runtime (coreai/manifest.json) nor export/: nothing here can serve it; pull it again"
		onlyLinux    = "this bundle carries only Core AI packages; the Core AI bridge is not available on linux: pull with --include-export to serve it on the CPU"
		absentDarwin = "this bundle carries only Core AI packages and the Core AI bridge libCoreAIBridge.dylib was not found (looked in /a/libCoreAIBridge.dylib, " + path + "): build and install it (packaging/bridge/build.sh; docs/COREAI.md says where it goes) or set FORGE_BRIDGE; or pull with --include-export to serve it on the CPU"
		abiDarwin    = "this bundle carries only Core AI packages and the Core AI bridge cannot be used: coreai: bridge library " + path + " has ABI version 2, this build needs 1: install the bridge built with this forged (packaging/bridge/build.sh; docs/COREAI.md says where it goes); or pull with --include-export to serve it on the CPU"
	)
	type want struct{ backend, reason string }
	table := map[[3]string]want{
		{"darwin", "loads", "coreai"}:      {backend: wire.BackendCoreAI},
		{"darwin", "loads", "both"}:        {backend: wire.BackendCoreAI},
		{"darwin", "loads", "export"}:      {backend: wire.BackendRef},
		{"darwin", "loads", "neither"}:     {reason: neither},
		{"darwin", "absent", "coreai"}:     {reason: absentDarwin},
		{"darwin", "absent", "both"}:       {backend: wire.BackendRef},
		{"darwin", "absent", "export"}:     {backend: wire.BackendRef},
		{"darwin", "absent", "neither"}:    {reason: neither},
		{"darwin", "wrong ABI", "coreai"}:  {reason: abiDarwin},
		{"darwin", "wrong ABI", "both"}:    {backend: wire.BackendRef},
		{"darwin", "wrong ABI", "export"}:  {backend: wire.BackendRef},
		{"darwin", "wrong ABI", "neither"}: {reason: neither},
		{"linux", "loads", "coreai"}:       {reason: onlyLinux},
		{"linux", "loads", "both"}:         {backend: wire.BackendRef},
		{"linux", "loads", "export"}:       {backend: wire.BackendRef},
		{"linux", "loads", "neither"}:      {reason: neither},
		{"linux", "absent", "coreai"}:      {reason: onlyLinux},
		{"linux", "absent", "both"}:        {backend: wire.BackendRef},
		{"linux", "absent", "export"}:      {backend: wire.BackendRef},
		{"linux", "absent", "neither"}:     {reason: neither},
		{"linux", "wrong ABI", "coreai"}:   {reason: onlyLinux},
		{"linux", "wrong ABI", "both"}:     {backend: wire.BackendRef},
		{"linux", "wrong ABI", "export"}:   {backend: wire.BackendRef},
		{"linux", "wrong ABI", "neither"}:  {reason: neither},
	}
	if len(table) != 2*len(bridges)*len(contents) {
		t.Fatalf("the table has %d cells, want every combination (%d)", len(table), 2*len(bridges)*len(contents))
	}
	for cell, w := range table {
		got, err := Choose(Auto, cell[0], bridges[cell[1]], contents[cell[2]])
		var ue *UnavailableError
		switch {
		case w.reason != "":
			if !errors.As(err, &ue) || ue.Reason != w.reason {
				t.Errorf("%v: got %+v, %v\nwant unavailable: %s", cell, got, err, w.reason)
			}
		case err != nil || got.Backend != w.backend || got.Why == "":
			t.Errorf("%v: got %+v, %v; want backend %s with a reason", cell, got, err, w.backend)
		}
	}
	// Why says what ruled Core AI out when auto falls back to the CPU.
	got, _ := Choose(Auto, "darwin", bridges["wrong ABI"], contents["both"])
	if want := "auto: the Core AI bridge cannot be used: coreai: bridge library " + path + " has ABI version 2"; len(got.Why) < len(want) || got.Why[:len(want)] != want {
		t.Errorf("why %q, want it to start %q", got.Why, want)
	}
}

// TestChooseForced: a forced backend is served when it can be, on any
// platform (Linux serves coreai through the stand-in bridge), and
// otherwise is unavailable naming what is missing — never a fallback.
func TestChooseForced(t *testing.T) {
	ok := Bridge{Path: "/tmp/libstandin.so", Release: "testbridge-1"}
	absent := Bridge{Tried: []string{"/x"}, Err: fmt.Errorf("%w: not found", cai.ErrBridgeNotFound)}
	cases := []struct {
		want, goos string
		br         Bridge
		have       Contents
		backend    string
		reason     string
	}{
		{wire.BackendCoreAI, "linux", ok, Contents{CoreAI: true}, wire.BackendCoreAI, ""},
		{wire.BackendCoreAI, "darwin", ok, Contents{CoreAI: true, Export: true}, wire.BackendCoreAI, ""},
		{wire.BackendCoreAI, "linux", ok, Contents{Export: true}, "", "backend coreai: the snapshot has no Core AI runtime (coreai/manifest.json): this bundle cannot be served through Core AI; set backend auto"},
		{wire.BackendCoreAI, "linux", absent, Contents{CoreAI: true}, "", "backend coreai: no Core AI bridge was found (looked in /x); on linux only the stand-in bridge (ane/coreai/standin) runs: point FORGE_BRIDGE at it"},
		{wire.BackendRef, "darwin", ok, Contents{CoreAI: true, Export: true}, wire.BackendRef, ""},
		{wire.BackendRef, "darwin", ok, Contents{CoreAI: true}, "", "backend ref: the snapshot has no export/ (the quantized layers the CPU engine reads): pull with --include-export, or set backend auto"},
		{"gpu", "darwin", ok, Contents{CoreAI: true}, "", `backend "gpu": want auto, coreai or ref`},
	}
	for _, c := range cases {
		got, err := Choose(c.want, c.goos, c.br, c.have)
		var ue *UnavailableError
		if c.reason != "" {
			if !errors.As(err, &ue) || ue.Reason != c.reason {
				t.Errorf("%s on %s %+v: got %+v, %v\nwant: %s", c.want, c.goos, c.have, got, err, c.reason)
			}
			continue
		}
		if err != nil || got.Backend != c.backend {
			t.Errorf("%s on %s %+v: got %+v, %v; want %s", c.want, c.goos, c.have, got, err, c.backend)
		}
	}
}

// TestWantsExport: pulls take export/ where it is read.
func TestWantsExport(t *testing.T) {
	for _, c := range []struct {
		backend, goos string
		want          bool
	}{
		{"", "darwin", false}, {Auto, "darwin", false}, {Auto, "linux", true}, {"", "linux", true},
		{wire.BackendRef, "darwin", true}, {wire.BackendCoreAI, "linux", false},
	} {
		if got := WantsExport(c.backend, c.goos); got != c.want {
			t.Errorf("WantsExport(%q, %q) = %v, want %v", c.backend, c.goos, got, c.want)
		}
	}
}
