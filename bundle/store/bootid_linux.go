package store

import (
	"fmt"
	"os"
	"strings"
)

// platformBootID is the kernel's random per-boot UUID.
func platformBootID() (string, error) {
	data, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return "", err
	}
	id := strings.TrimSpace(string(data))
	if id == "" {
		return "", fmt.Errorf("/proc/sys/kernel/random/boot_id is empty")
	}
	return id, nil
}
