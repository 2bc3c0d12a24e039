//go:build !linux

package hub

import "os"

// startWriteback has no asynchronous equivalent outside Linux; the fsync
// (before install, or when the store settles a deferred one) does all the
// writing.
func startWriteback(*os.File) {}
