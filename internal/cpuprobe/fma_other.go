//go:build !amd64

package cpuprobe

func FMABurst(n int) {}

func HaveFMA() bool { return false }
