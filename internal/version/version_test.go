package version

import (
	"strings"
	"testing"
)

func TestLinkerValuesWin(t *testing.T) {
	oldV, oldC, oldD := Version, Commit, Date
	defer func() { Version, Commit, Date = oldV, oldC, oldD }()
	Version, Commit, Date = "v1.2.3", "abc123", "2026-11-29T00:00:00Z"
	info := Get()
	if info.Version != "v1.2.3" || info.Commit != "abc123" || info.Date != "2026-11-29T00:00:00Z" {
		t.Fatalf("linker values not used: %+v", info)
	}
	if s := info.String(); !strings.HasPrefix(s, "v1.2.3 (commit abc123, built 2026-11-29T00:00:00Z") {
		t.Fatalf("String() = %q", s)
	}
}

func TestUnsetValuesAreNamed(t *testing.T) {
	oldC, oldD := Commit, Date
	defer func() { Commit, Date = oldC, oldD }()
	Commit, Date = "", ""
	info := Get()
	if info.Commit == "" || info.Date == "" {
		t.Fatalf("empty commit or date should read as unknown or the VCS stamp: %+v", info)
	}
}
