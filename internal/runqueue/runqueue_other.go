//go:build !linux

package runqueue

// SpareCPUs has no instantaneous run-queue count to read here (macOS
// publishes load averages, not the queues' length now): ok is false and
// the pool judges by its Runs alone.
func SpareCPUs() (spare int, ok bool) { return 0, false }
