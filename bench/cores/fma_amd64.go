//go:build amd64

package main

import "golang.org/x/sys/cpu"

//go:noescape
func fmaBurst(n int)

func haveFMAProbe() bool { return cpu.X86.HasAVX512F }
