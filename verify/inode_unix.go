//go:build unix

package verify

import (
	"os"
	"syscall"
)

// inode returns the file's inode number (0 if the platform hides it).
func inode(st os.FileInfo) uint64 {
	if s, ok := st.Sys().(*syscall.Stat_t); ok {
		return uint64(s.Ino)
	}
	return 0
}
