//go:build amd64

package cpuprobe

import "golang.org/x/sys/cpu"

//go:noescape
func FMABurst(n int)

func HaveFMA() bool { return cpu.X86.HasAVX512F }
