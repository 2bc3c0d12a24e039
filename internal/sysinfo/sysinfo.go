// Package sysinfo reports the machine facts the daemon budgets with and the
// doctor checks: memory (and a cgroup limit), memory pressure, free disk,
// OS version, and the chip with its Neural Engine generation.
//
// Source is the interface the residency policy depends on; Host is the real
// machine and Static a fake one for tests.
package sysinfo

import (
	"fmt"
	"runtime"
)

// Memory is the machine's memory in bytes.
type Memory struct {
	Total     uint64 `json:"total_bytes"`
	Available uint64 `json:"available_bytes"`
	// CgroupLimit is the Linux cgroup memory limit for this process (the
	// smallest along its cgroup path), 0 when unlimited or not Linux.
	CgroupLimit uint64 `json:"cgroup_limit_bytes,omitempty"`
}

// Budget is the memory this process may use at most: the total, or the
// cgroup limit when that is smaller.
func (m Memory) Budget() uint64 {
	if m.CgroupLimit != 0 && m.CgroupLimit < m.Total {
		return m.CgroupLimit
	}
	return m.Total
}

// Level is a memory pressure level, ordered from calm to critical.
type Level int

const (
	Normal Level = iota
	Warning
	Critical
)

func (l Level) String() string {
	switch l {
	case Normal:
		return "normal"
	case Warning:
		return "warning"
	case Critical:
		return "critical"
	}
	return fmt.Sprintf("level(%d)", int(l))
}

// MarshalText writes the level's name in JSON.
func (l Level) MarshalText() ([]byte, error) { return []byte(l.String()), nil }

// Pressure is the current memory pressure.
type Pressure struct {
	Level  Level  `json:"level"`
	Source string `json:"source"` // where the level came from, e.g. "/proc/pressure/memory"
	// PSI averages over 10 s (percent of time stalled), Linux only.
	SomeAvg10 float64 `json:"some_avg10,omitempty"`
	FullAvg10 float64 `json:"full_avg10,omitempty"`
}

// Disk is the space of the filesystem holding Path.
type Disk struct {
	Path  string `json:"path"`
	Free  uint64 `json:"free_bytes"` // available to unprivileged writers
	Total uint64 `json:"total_bytes"`
}

// OS identifies the operating system.
type OS struct {
	Name    string `json:"name"`    // "macOS", or the Linux distribution's PRETTY_NAME
	Version string `json:"version"` // "27.0", or the distribution's VERSION_ID
	Kernel  string `json:"kernel"`
	Arch    string `json:"arch"`
}

// Chip identifies the processor and its Neural Engine.
type Chip struct {
	Brand string `json:"brand"`           // "Apple M6 Max", "AMD EPYC"
	Model string `json:"model,omitempty"` // hardware model, "Mac18,5" (macOS)
	// ANEGeneration is the Apple M-series generation whose Neural Engine
	// this is (1 for M1 …), 0 when there is none.
	ANEGeneration int    `json:"ane_generation"`
	NeuralEngine  string `json:"neural_engine"`
}

// Source reports machine facts. Implementations must be safe for concurrent use.
type Source interface {
	Memory() (Memory, error)
	Pressure() (Pressure, error)
	Disk(path string) (Disk, error)
	OS() (OS, error)
	Chip() (Chip, error)
}

// Host is the machine this process runs on.
func Host() Source { return host{} }

type host struct{}

func (host) Disk(path string) (Disk, error) { return diskOf(path) }

// Static is a fake machine for tests: it answers with its fields, or Err.
type Static struct {
	Mem      Memory
	Press    Pressure
	DiskInfo Disk // Path is replaced by the path asked for
	OSInfo   OS
	ChipInfo Chip
	Err      error
}

func (s *Static) Memory() (Memory, error)     { return s.Mem, s.Err }
func (s *Static) Pressure() (Pressure, error) { return s.Press, s.Err }
func (s *Static) OS() (OS, error)             { return s.OSInfo, s.Err }
func (s *Static) Chip() (Chip, error)         { return s.ChipInfo, s.Err }
func (s *Static) Disk(path string) (Disk, error) {
	d := s.DiskInfo
	d.Path = path
	return d, s.Err
}

var _ Source = (*Static)(nil)
var _ Source = host{}

func goarch() string { return runtime.GOARCH }
