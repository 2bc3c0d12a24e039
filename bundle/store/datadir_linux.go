package store

import (
	"os"
	"path/filepath"
)

// DefaultDataDir is $XDG_DATA_HOME/forge (~/.local/share/forge).
func DefaultDataDir() string {
	if d := os.Getenv("XDG_DATA_HOME"); d != "" {
		return filepath.Join(d, "forge")
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return filepath.Join(os.TempDir(), "forge")
	}
	return filepath.Join(home, ".local", "share", "forge")
}
