package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/forgedaemon/forged/client/wire"
	"github.com/forgedaemon/forged/daemon/fakeengine"
)

func TestStatusAndPs(t *testing.T) {
	sock := startDaemon(t)
	out, _, err := runCtl(t, "", "status", "--socket", sock)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"state       ready", "fake/instant @ 0000000000000000000000000000000000000fake", "1 connected"} {
		if !strings.Contains(out, want) {
			t.Errorf("status output lacks %q:\n%s", want, out)
		}
	}
	out, _, err = runCtl(t, "", "status", "--socket", sock, "--json")
	var st wire.StatusResult
	if err != nil || json.Unmarshal([]byte(out), &st) != nil || st.State != "ready" || st.Bundle.Model != "fake-bytes" {
		t.Fatalf("status --json: %v\n%s", err, out)
	}
	out, _, err = runCtl(t, "", "ps", "--socket", sock, "--json")
	var ps struct {
		Sessions []wire.SessionInfo `json:"sessions"`
		Requests []wire.RequestInfo `json:"requests"`
	}
	if err != nil || json.Unmarshal([]byte(out), &ps) != nil || ps.Sessions == nil || ps.Requests == nil {
		t.Fatalf("ps --json: %v\n%s", err, out)
	}
	if out, _, err = runCtl(t, "", "ps", "--socket", sock); err != nil || !strings.Contains(out, "SESSION") || !strings.Contains(out, "REQUEST") {
		t.Fatalf("ps: %v\n%s", err, out)
	}
	for _, cmd := range []string{"status", "ps"} {
		if _, _, err := runCtl(t, "", cmd, "--socket", filepath.Join(t.TempDir(), "none")); err == nil || !strings.Contains(err.Error(), "connect to forged") {
			t.Fatalf("%s with no daemon: %v", cmd, err)
		}
	}
}

func TestChatAndGenerate(t *testing.T) {
	sock := startDaemon(t)
	want := strings.ToValidUTF8(strings.Repeat(fakeengine.Reply, 2)[:30], "\uFFFD")
	out, errOut, err := runCtl(t, "", "chat", "--socket", sock, "--usage", "hello", "there")
	if err != nil || out != want+"\n" || !strings.Contains(errOut, "[stop: ") {
		t.Fatalf("chat: %v\nout %q\nerr %q", err, out, errOut)
	}
	// Message on stdin (not a terminal), JSON lines.
	out, _, err = runCtl(t, "hi from stdin", "chat", "--socket", sock, "--json", "--max-tokens", "5")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var last struct {
		Event  string                `json:"event"`
		Result wire.GenerationResult `json:"result"`
	}
	if json.Unmarshal([]byte(lines[len(lines)-1]), &last) != nil || last.Event != "done" || last.Result.Usage.GeneratedTokens != 5 || last.Result.FinishReason != "length" {
		t.Fatalf("chat --json last line %q", lines[len(lines)-1])
	}
	var streamed string
	for _, l := range lines[:len(lines)-1] {
		var ev struct {
			Event string `json:"event"`
			Text  string `json:"text"`
		}
		if json.Unmarshal([]byte(l), &ev) != nil || ev.Event != "token" {
			t.Fatalf("token line %q", l)
		}
		streamed += ev.Text
	}
	if streamed != last.Result.Text {
		t.Errorf("streamed %q, result %q", streamed, last.Result.Text)
	}
	out, _, err = runCtl(t, "", "generate", "--socket", sock, "--ids", "1,2,3", "--stop", "wö")
	if err != nil || out != "héllo \n" {
		t.Fatalf("generate: %v %q", err, out)
	}
	if _, _, err := runCtl(t, "", "generate", "--socket", sock, "--ids", "1,x"); err == nil || !strings.Contains(err.Error(), `item 2 ("x")`) {
		t.Fatalf("bad ids: %v", err)
	}
	if _, _, err := runCtl(t, "", "chat", "--socket", sock, "--thinking", "maybe", "hi"); err == nil || !strings.Contains(err.Error(), "--thinking") {
		t.Fatalf("bad --thinking: %v", err)
	}
	_, _, err = runCtl(t, "", "generate", "--socket", sock, "--max-tokens", "70000", "x")
	if err == nil || !strings.Contains(err.Error(), "context_exceeded") {
		t.Fatalf("context exceeded: %v", err)
	}
}
