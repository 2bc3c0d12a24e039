// Package tokens is the store of the HTTP API's bearer tokens: each maps to
// an app name (the caller identity on loopback TCP, where the kernel says
// nothing about the caller). Only the SHA-256 of each token is kept, in one
// JSON file (mode 0600) in the data directory; the token itself is shown
// once, when it is created.
package tokens

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/forgedaemon/forged/internal/atomicfile"
	"github.com/forgedaemon/forged/internal/strictjson"
)

// FileName is the store's file in the data directory.
const FileName = "http-tokens.json"

// Prefix starts every token, so a leaked one is recognisable (secret
// scanners) and a mistyped header is told apart from a wrong token.
const Prefix = "fgd_"

// Info is what the store keeps of a token (never the token).
type Info struct {
	ID        string `json:"id"`
	App       string `json:"app"`
	Hash      string `json:"sha256"` // hex SHA-256 of the token
	CreatedMS int64  `json:"created_ms"`
	CreatedBy uint32 `json:"created_by"` // uid of the admin who created it
}

type file struct {
	Tokens []Info `json:"tokens"`
}

// Store holds the tokens of one file; safe for concurrent use.
type Store struct {
	path string

	mu     sync.Mutex
	tokens []Info
	byHash map[string]Info
}

// ErrNotFound is Revoke's error for an unknown id.
var ErrNotFound = errors.New("no such token")

var appName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// ValidApp checks an app name: 1–64 of letters, digits, '.', '_', '-',
// starting with a letter or digit (it is shown in status and logs).
func ValidApp(app string) error {
	if !appName.MatchString(app) {
		return fmt.Errorf("app name %q: want 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit", app)
	}
	return nil
}

// Open reads the store at path; a missing file is an empty store. A file
// that is not the store's format, or that others may read, is refused.
func Open(path string) (*Store, error) {
	s := &Store{path: path, byHash: map[string]Info{}}
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return nil, err
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("token store %s has mode %04o: it must be readable by its owner only (chmod 600 %s)", path, fi.Mode().Perm(), path)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var f file
	if err := strictjson.Decode(data, &f, strictjson.Options{DisallowUnknownFields: true}); err != nil {
		return nil, fmt.Errorf("token store %s: %w", path, err)
	}
	for i, t := range f.Tokens {
		if h, err := hex.DecodeString(t.Hash); err != nil || len(h) != sha256.Size || t.ID == "" || ValidApp(t.App) != nil {
			return nil, fmt.Errorf("token store %s: tokens[%d] is malformed (id, app and a 64-digit hex sha256 are required)", path, i)
		}
		s.byHash[t.Hash] = t
	}
	s.tokens = f.Tokens
	return s, nil
}

// Path is the store's file.
func (s *Store) Path() string { return s.path }

// Create mints a token for app, records its hash and returns the token
// (the only time it exists outside the caller) and its record.
func (s *Store) Create(app string, by uint32) (string, Info, error) {
	if err := ValidApp(app); err != nil {
		return "", Info{}, err
	}
	secret := make([]byte, 32) // 256 bits
	idb := make([]byte, 6)
	rand.Read(secret)
	rand.Read(idb)
	token := Prefix + base64.RawURLEncoding.EncodeToString(secret)
	t := Info{ID: "tok_" + hex.EncodeToString(idb), App: app, Hash: hashOf(token), CreatedMS: time.Now().UnixMilli(), CreatedBy: by}
	s.mu.Lock()
	defer s.mu.Unlock()
	next := append(slices.Clip(s.tokens), t)
	if err := s.save(next); err != nil {
		return "", Info{}, err
	}
	s.tokens = next
	s.byHash[t.Hash] = t
	return token, t, nil
}

// List returns every token's record, oldest first.
func (s *Store) List() []Info {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.tokens)
}

// Revoke deletes a token: from the next request on it is refused.
func (s *Store) Revoke(id string) (Info, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := slices.IndexFunc(s.tokens, func(t Info) bool { return t.ID == id })
	if i < 0 {
		return Info{}, fmt.Errorf("%w: %q", ErrNotFound, id)
	}
	t := s.tokens[i]
	next := slices.Delete(slices.Clone(s.tokens), i, i+1)
	if err := s.save(next); err != nil {
		return Info{}, err
	}
	s.tokens = next
	delete(s.byHash, t.Hash)
	return t, nil
}

// Lookup finds the record of a presented token.
func (s *Store) Lookup(token string) (Info, bool) {
	if !strings.HasPrefix(token, Prefix) {
		return Info{}, false
	}
	h := hashOf(token)
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.byHash[h]
	return t, ok
}

func (s *Store) save(tokens []Info) error {
	if tokens == nil {
		tokens = []Info{}
	}
	data, err := json.MarshalIndent(file{Tokens: tokens}, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(s.path, append(data, '\n'), 0o600)
}

func hashOf(token string) string {
	h := sha256.Sum256([]byte(token))
	return hex.EncodeToString(h[:])
}
