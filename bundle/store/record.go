package store

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/forgedaemon/forged/bundle"
	"github.com/forgedaemon/forged/internal/atomicfile"
	"github.com/forgedaemon/forged/verify"
)

// installRecord is what the store remembers about a snapshot: which
// components it holds and the verification record for fast verify.
type installRecord struct {
	Selection selection      `json:"selection"`
	Record    *verify.Record `json:"record"`
}

type selection struct {
	Runtime       string `json:"runtime"`
	Plain         bool   `json:"plain"`
	IncludeExport bool   `json:"include_export"`
}

func selectionOf(s bundle.Selection) selection {
	return selection{Runtime: s.RuntimeName(), Plain: s.Plain, IncludeExport: s.IncludeExport}
}

// covers reports whether a snapshot with this selection has everything want asks for.
func (have selection) covers(want bundle.Selection) bool {
	return have.Runtime == want.RuntimeName() && (want.Plain || !have.Plain) && (!want.IncludeExport || have.IncludeExport)
}

func (r *installRecord) bytes() int64 {
	var n int64
	for _, e := range r.Record.Files {
		n += e.Size
	}
	return n
}

func (s *Store) readRecord(repo, commit string) (*installRecord, error) {
	data, err := os.ReadFile(s.recordPath(repo, commit))
	if err != nil {
		return nil, err
	}
	var r installRecord
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, err
	}
	if r.Record == nil {
		return nil, fmt.Errorf("%s: no verification record", s.recordPath(repo, commit))
	}
	return &r, nil
}

func (s *Store) writeRecord(repo, commit string, r *installRecord) error {
	p := s.recordPath(repo, commit)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	data, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return atomicfile.Write(p, data, 0o644)
}
