package cai

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// CompileModeEnv is the MPSGraph variable selecting the ANE bonded compile mode.
const CompileModeEnv = "MPSGRAPH_ANE_BONDED_COMPILE_MODE"

// Chip is an Apple SoC generation as the ANE compiler numbers it (H17 = M5).
type Chip int

func (c Chip) String() string { return "H" + strconv.Itoa(int(c)) }

// SoC is the manifest's entries_by_soc key for the chip ("m5" for H17).
func (c Chip) SoC() string { return "m" + strconv.Itoa(int(c)-12) }

// CompileMode is the bonded compile mode for a chip: M5 family (H17) → 1,
// M6 (H18) and later → 2; earlier chips are not supported by the bundle.
func CompileMode(c Chip) (int, error) {
	switch {
	case c >= 18:
		return 2, nil
	case c == 17:
		return 1, nil
	}
	return 0, fmt.Errorf("coreai: chip %s (M%d) is older than M5; the published graphs need H17 or later", c, int(c)-12)
}

var (
	brandRe = regexp.MustCompile(`\bM(\d+)\b`)
	modelRe = regexp.MustCompile(`^Mac(\d+),\d+$`)
	archRe  = regexp.MustCompile(`^[Hh](\d+)`)
)

// ParseChip reads a chip generation from, in order of preference, a
// COREAI_ARCH value ("h17", "H18g"), an ioreg soc-generation ("H17"), a
// CPU brand string ("Apple M5 Pro") or a hardware model ("Mac18,5" → H18).
func ParseChip(arch, socGeneration, brand, hwModel string) (Chip, error) {
	for _, s := range []string{arch, socGeneration} {
		if m := archRe.FindStringSubmatch(strings.TrimSpace(s)); m != nil {
			n, _ := strconv.Atoi(m[1])
			return Chip(n), nil
		}
	}
	if m := brandRe.FindStringSubmatch(brand); m != nil {
		n, _ := strconv.Atoi(m[1])
		return Chip(n + 12), nil
	}
	if m := modelRe.FindStringSubmatch(strings.TrimSpace(hwModel)); m != nil {
		n, _ := strconv.Atoi(m[1])
		return Chip(n), nil
	}
	return 0, fmt.Errorf("coreai: cannot tell the Apple chip (arch %q, soc-generation %q, brand %q, model %q)",
		arch, socGeneration, brand, hwModel)
}
