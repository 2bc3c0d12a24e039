package store

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// platformBootID is the boot time (kern.boottime) to the microsecond,
// which differs between any two boots of the machine.
func platformBootID() (string, error) {
	tv, err := unix.SysctlTimeval("kern.boottime")
	if err != nil {
		return "", fmt.Errorf("sysctl kern.boottime: %w", err)
	}
	return fmt.Sprintf("%d.%06d", tv.Sec, tv.Usec), nil
}
