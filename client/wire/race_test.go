//go:build race

package wire

// raceEnabled: the race detector allocates on its own, so allocation counts
// are not asserted under -race.
const raceEnabled = true
