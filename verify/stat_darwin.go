package verify

import "syscall"

func statCtime(s *syscall.Stat_t) int64 { return s.Ctimespec.Nano() }
