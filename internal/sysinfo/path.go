package sysinfo

import (
	"os"
	"path/filepath"
)

// nearestExisting walks up from path to the first ancestor that exists.
func nearestExisting(path string) string {
	p := filepath.Clean(path)
	for {
		if _, err := os.Stat(p); err == nil {
			return p
		}
		parent := filepath.Dir(p)
		if parent == p {
			return p
		}
		p = parent
	}
}
