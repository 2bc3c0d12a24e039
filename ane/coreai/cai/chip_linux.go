package cai

import "os"

// DetectChip on Linux only honours COREAI_ARCH (there is no Apple chip to
// ask); tests use it to exercise the per-chip entry selection.
func DetectChip() (Chip, error) { return ParseChip(os.Getenv("COREAI_ARCH"), "", "", "") }
