//go:build unix && !linux && !darwin

package verify

import "syscall"

// statCtime is unknown here: no file is vouched for, every one is hashed.
func statCtime(*syscall.Stat_t) int64 { return 0 }
