package sysinfo

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// diskOf reports the filesystem holding path (the nearest existing parent:
// the data directory may not exist yet).
func diskOf(path string) (Disk, error) {
	p := nearestExisting(path)
	var st unix.Statfs_t
	if err := unix.Statfs(p, &st); err != nil {
		return Disk{}, fmt.Errorf("statfs %s: %w", p, err)
	}
	bs := uint64(st.Bsize)
	return Disk{Path: path, Free: uint64(st.Bavail) * bs, Total: uint64(st.Blocks) * bs}, nil
}
