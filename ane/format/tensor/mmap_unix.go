//go:build unix

package tensor

import (
	"os"

	"golang.org/x/sys/unix"
)

// mapFile maps size bytes of f read-only. Callers fall back to ReadAt when
// it fails (a filesystem without mmap, a file larger than the address space).
func mapFile(f *os.File, size int64) ([]byte, error) {
	if size == 0 || int64(int(size)) != size {
		return nil, unix.EINVAL
	}
	return unix.Mmap(int(f.Fd()), 0, int(size), unix.PROT_READ, unix.MAP_SHARED)
}

func unmapFile(b []byte) error { return unix.Munmap(b) }
