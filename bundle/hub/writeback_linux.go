package hub

import (
	"os"

	"golang.org/x/sys/unix"
)

// startWriteback asks the kernel to start writing the file's dirty pages
// now, without waiting for them, so disk writes overlap the download and
// the fsync before install finds little left to do. Errors are ignored:
// the fsync that follows reports any real write failure.
func startWriteback(f *os.File) {
	_ = unix.SyncFileRange(int(f.Fd()), 0, 0, unix.SYNC_FILE_RANGE_WRITE)
}
