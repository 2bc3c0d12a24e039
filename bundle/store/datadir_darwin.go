package store

import (
	"os"
	"path/filepath"
)

// DefaultDataDir is /Library/Application Support/Forge for root (the
// system daemon) and ~/Library/Application Support/Forge for a user.
func DefaultDataDir() string {
	if os.Geteuid() == 0 {
		return "/Library/Application Support/Forge"
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return filepath.Join(os.TempDir(), "Forge")
	}
	return filepath.Join(home, "Library", "Application Support", "Forge")
}
