package sysinfo

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"path"
	"strings"

	"golang.org/x/sys/unix"
)

// cgroupRoot is where the cgroup filesystems are mounted.
const cgroupRoot = "/sys/fs/cgroup"

func (host) Memory() (Memory, error) {
	data, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return Memory{}, err
	}
	total, avail, err := ParseMeminfo(data)
	if err != nil {
		return Memory{}, err
	}
	m := Memory{Total: total, Available: avail}
	if cg, err := os.ReadFile("/proc/self/cgroup"); err == nil {
		if paths, err := ParseProcCgroup(cg); err == nil {
			m.CgroupLimit = cgroupLimit(paths)
		}
	}
	if m.CgroupLimit != 0 && m.Available > m.CgroupLimit {
		m.Available = m.CgroupLimit
	}
	return m, nil
}

// cgroupLimit is the smallest memory limit on the path from this process's
// cgroup up to the root (a parent's limit binds its children too).
func cgroupLimit(p CgroupPaths) uint64 {
	var dir, file string
	switch {
	case p.V2 != "" && fileExists(path.Join(cgroupRoot, "cgroup.controllers")):
		dir, file = p.V2, "memory.max"
	case p.V1Memory != "":
		dir, file = p.V1Memory, "memory.limit_in_bytes"
		return smallestLimit(path.Join(cgroupRoot, "memory"), dir, file)
	default:
		return 0
	}
	return smallestLimit(cgroupRoot, dir, file)
}

func smallestLimit(root, dir, file string) uint64 {
	var limit uint64
	for d := dir; ; d = path.Dir(d) {
		if data, err := os.ReadFile(path.Join(root, d, file)); err == nil {
			if n, err := ParseCgroupLimit(data); err == nil && n != 0 && (limit == 0 || n < limit) {
				limit = n
			}
		}
		if d == "/" || d == "." {
			return limit
		}
	}
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

func (host) Pressure() (Pressure, error) {
	data, err := os.ReadFile("/proc/pressure/memory")
	if errors.Is(err, os.ErrNotExist) {
		// Kernels without CONFIG_PSI: no signal, assume calm and say so.
		return Pressure{Level: Normal, Source: "none (no /proc/pressure/memory)"}, nil
	}
	if err != nil {
		return Pressure{}, err
	}
	return ParsePSI(data)
}

func (host) OS() (OS, error) {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return OS{}, err
	}
	o := OS{Name: "Linux", Kernel: unix.ByteSliceToString(u.Release[:]), Arch: goarch()}
	if data, err := os.ReadFile("/etc/os-release"); err == nil {
		o.Name, o.Version = ParseOSRelease(data)
	}
	return o, nil
}

func (host) Chip() (Chip, error) {
	c := Chip{Brand: "unknown"}
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(bytes.NewReader(data))
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				c.Brand = strings.TrimSpace(v)
				break
			}
		}
	}
	c.ANEGeneration, c.NeuralEngine = 0, "none (Linux: the reference CPU backend runs instead)"
	return c, nil
}
