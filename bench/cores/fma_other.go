//go:build !amd64

package main

func fmaBurst(n int) {}

func haveFMAProbe() bool { return false }
