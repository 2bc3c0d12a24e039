package main

import (
	"encoding/json"
	"runtime"
	"strings"
	"testing"

	"github.com/forgedaemon/forged/internal/version"
)

func TestVersionJSON(t *testing.T) {
	saved := [3]string{version.Version, version.Commit, version.Date}
	defer func() { version.Version, version.Commit, version.Date = saved[0], saved[1], saved[2] }()
	version.Version, version.Commit, version.Date = "v1.2.3-test", "0123abcd", "2026-11-29T19:00:00Z"

	out, _, err := runCtl(t, "", "version", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var got version.Info
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	want := version.Info{Version: "v1.2.3-test", Commit: "0123abcd", Date: "2026-11-29T19:00:00Z",
		GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if got != want {
		t.Errorf("version --json = %+v, want %+v", got, want)
	}
	text, _, err := runCtl(t, "", "version")
	if err != nil || !strings.HasPrefix(text, "forgectl v1.2.3-test (commit 0123abcd") {
		t.Errorf("version text = %q, %v", text, err)
	}
}
