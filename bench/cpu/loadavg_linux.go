package main

import (
	"os"
	"strings"
)

// loadAvg is the 1-, 5- and 15-minute load averages from /proc/loadavg
// ("" if unreadable).
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}
