//go:build !linux

package hub

import "os"

// startWriteback has no asynchronous equivalent outside Linux; the fsync
// before install does all the writing.
func startWriteback(*os.File) {}
