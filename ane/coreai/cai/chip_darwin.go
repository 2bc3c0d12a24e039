package cai

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
)

var socGenRe = regexp.MustCompile(`"soc-generation"\s*=\s*<?"?([Hh]\d+)`)

// DetectChip asks the machine: COREAI_ARCH, ioreg's soc-generation,
// sysctl machdep.cpu.brand_string, then hw.model. Unverified on hardware.
func DetectChip() (Chip, error) {
	run := func(name string, args ...string) string {
		out, err := exec.Command(name, args...).Output()
		if err != nil {
			return ""
		}
		return strings.TrimSpace(string(out))
	}
	soc := ""
	if m := socGenRe.FindStringSubmatch(run("ioreg", "-l", "-d", "2", "-w", "0")); m != nil {
		soc = m[1]
	}
	return ParseChip(os.Getenv("COREAI_ARCH"), soc, run("sysctl", "-n", "machdep.cpu.brand_string"),
		run("sysctl", "-n", "hw.model"))
}
