package sysinfo

import (
	"golang.org/x/sys/unix"
)

// The sysctls below are documented in xnu; this file is cross-compiled
// here and has not been run on a Mac.

func (host) Memory() (Memory, error) {
	total, err := unix.SysctlUint64("hw.memsize")
	if err != nil {
		return Memory{}, err
	}
	m := Memory{Total: total}
	// kern.memorystatus_level is the percentage of memory available to
	// processes (free + reclaimable), as the memory status subsystem
	// counts it; fall back to the free page count.
	if pct, err := unix.SysctlUint32("kern.memorystatus_level"); err == nil && pct <= 100 {
		m.Available = total / 100 * uint64(pct)
	} else if free, err := unix.SysctlUint32("vm.page_free_count"); err == nil {
		m.Available = uint64(free) * uint64(unix.Getpagesize())
	}
	return m, nil
}

func (host) Pressure() (Pressure, error) {
	v, err := unix.SysctlUint32("kern.memorystatus_vm_pressure_level")
	if err != nil {
		return Pressure{}, err
	}
	lvl, err := DarwinPressureLevel(v)
	return Pressure{Level: lvl, Source: "kern.memorystatus_vm_pressure_level"}, err
}

func (host) OS() (OS, error) {
	o := OS{Name: "macOS", Arch: goarch()}
	o.Version, _ = unix.Sysctl("kern.osproductversion")
	o.Kernel, _ = unix.Sysctl("kern.osrelease")
	return o, nil
}

func (host) Chip() (Chip, error) {
	brand, err := unix.Sysctl("machdep.cpu.brand_string")
	if err != nil {
		return Chip{}, err
	}
	c := Chip{Brand: brand}
	c.Model, _ = unix.Sysctl("hw.model")
	c.ANEGeneration, c.NeuralEngine = NeuralEngineOf(brand)
	return c, nil
}
