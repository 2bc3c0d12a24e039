//go:build !linux

package main

// procFDs and procRSS read /proc, which only Linux has; elsewhere they
// report -1 (unknown) and the bounds are not checked.
func procFDs(int) int   { return -1 }
func procRSS(int) int64 { return -1 }
