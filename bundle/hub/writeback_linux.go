package hub

import (
	"os"

	"golang.org/x/sys/unix"
)

// startWriteback asks the kernel to start writing the file's dirty pages
// now, without waiting for them, so disk writes overlap the download and
// the later fsync (before install, or when the store settles a deferred
// one) finds little left to do. Errors are ignored: that fsync reports any
// real write failure.
func startWriteback(f *os.File) {
	_ = unix.SyncFileRange(int(f.Fd()), 0, 0, unix.SYNC_FILE_RANGE_WRITE)
}
