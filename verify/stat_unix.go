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

// ctimeNS returns the file's status-change time in nanoseconds (0 if
// unknown: such a file is never vouched for, so always hashed).
func ctimeNS(st os.FileInfo) int64 {
	if s, ok := st.Sys().(*syscall.Stat_t); ok {
		return statCtime(s)
	}
	return 0
}
