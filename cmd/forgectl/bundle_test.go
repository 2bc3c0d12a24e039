package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/forgedaemon/forged/bundle/store"
	"github.com/forgedaemon/forged/client/wire"
)

func TestProgressBarShowsBytesRateETAAndFiles(t *testing.T) {
	var out bytes.Buffer
	bar := newProgressBar(&out)
	bar.event(store.Event{Kind: "plan", Total: 100 << 20, Message: "3 of 5 files to download"})
	bar.start = time.Now().Add(-2 * time.Second) // 25 MiB in 2 s
	bar.event(store.Event{Kind: "progress", Done: 25 << 20, Total: 100 << 20, Active: []string{"coreai/chunk_L00-03.aimodel/weights/weight-00.bin", "model/config.json"}})
	s := out.String()
	for _, want := range []string{"3 of 5 files to download", "[#######", "25.0 MiB/100.0 MiB", "MiB/s", "ETA ", "weight-00.bin (+1)"} {
		if !strings.Contains(s, want) {
			t.Errorf("bar output lacks %q:\n%q", want, s)
		}
	}
	if strings.Contains(s, "ETA --") || !(strings.Contains(s, "ETA 6s") || strings.Contains(s, "ETA 7s")) {
		t.Errorf("ETA for 75 MiB at ~12.5 MiB/s should be about 6 s:\n%q", s)
	}
	// A message line clears the bar first.
	out.Reset()
	bar.event(store.Event{Kind: "retry", Path: "x.bin", Message: "sha256 mismatch; fetching the file again"})
	if !strings.HasPrefix(out.String(), "\r") || !strings.Contains(out.String(), "x.bin: sha256 mismatch") {
		t.Fatalf("retry line: %q", out.String())
	}
}

// update apply through the daemon: its progress events carry no
// repository; the line names the served one (it printed " resolved to …").
func TestDaemonProgressNamesTheRepository(t *testing.T) {
	var out bytes.Buffer
	bar := newProgressBar(&out)
	bar.event(storeEvent("anemll/forge", wire.ProgressEvent{Kind: "resolved", Commit: "0123abcd"}))
	if got := strings.TrimLeft(out.String(), "\r "); got != "anemll/forge resolved to 0123abcd\n" {
		t.Errorf("resolved line %q", out.String())
	}
	out.Reset()
	bar.event(store.Event{Kind: "resolved", Commit: "0123abcd"})
	if got := strings.TrimLeft(out.String(), "\r "); got != "resolved to 0123abcd\n" {
		t.Errorf("resolved line without a repository %q", out.String())
	}
}
