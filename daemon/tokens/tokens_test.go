package tokens

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCreateLookupRevokePersist: a created token is found by its value,
// survives a reopen (from the file, which holds only its hash, mode 0600)
// and is refused once revoked.
func TestCreateLookupRevokePersist(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	tok, info, err := s.Create("editor", 501)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(tok, Prefix) || len(tok) != len(Prefix)+43 { // 32 bytes, base64url without padding
		t.Fatalf("token %q: want %s + 43 characters", tok, Prefix)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), tok) || strings.Contains(string(raw), tok[len(Prefix):]) {
		t.Fatal("the store file holds the token itself")
	}
	sum := sha256.Sum256([]byte(tok))
	if !strings.Contains(string(raw), hex.EncodeToString(sum[:])) {
		t.Fatalf("the store file does not hold the token's SHA-256: %s", raw)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Fatalf("store mode %04o, want 0600", fi.Mode().Perm())
	}
	s2, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	got, ok := s2.Lookup(tok)
	if !ok || got.App != "editor" || got.ID != info.ID || got.CreatedBy != 501 {
		t.Fatalf("lookup after reopen: %+v %v", got, ok)
	}
	if _, ok := s2.Lookup(tok + "x"); ok {
		t.Fatal("a different token was accepted")
	}
	if _, err := s2.Revoke(info.ID); err != nil {
		t.Fatal(err)
	}
	if _, ok := s2.Lookup(tok); ok {
		t.Fatal("a revoked token was accepted")
	}
	if _, err := s2.Revoke(info.ID); err == nil {
		t.Fatal("revoking twice succeeded")
	}
	s3, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := s3.Lookup(tok); ok || len(s3.List()) != 0 {
		t.Fatal("the revocation was not saved")
	}
}

func TestRefusals(t *testing.T) {
	dir := t.TempDir()
	s, _ := Open(filepath.Join(dir, FileName))
	for _, app := range []string{"", "has space", strings.Repeat("a", 65), "-lead", "tab\t"} {
		if _, _, err := s.Create(app, 0); err == nil {
			t.Errorf("app %q accepted", app)
		}
	}
	loose := filepath.Join(dir, "loose.json")
	os.WriteFile(loose, []byte(`{"tokens":[]}`), 0o644)
	if _, err := Open(loose); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Errorf("a world-readable store: %v", err)
	}
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"tokens":[{"id":"tok_1","app":"a","sha256":"abc","created_ms":0,"created_by":0}]}`), 0o600)
	if _, err := Open(bad); err == nil || !strings.Contains(err.Error(), "tokens[0]") {
		t.Errorf("a malformed hash: %v", err)
	}
}
