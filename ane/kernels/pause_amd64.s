//go:build !purego

#include "textflag.h"

// func spinPause()
// PAUSE tells the core this is a spin-wait: it stops issuing for a while,
// leaving the execution units to the SMT sibling.
TEXT ·spinPause(SB), NOSPLIT, $0-0
	PAUSE
	PAUSE
	PAUSE
	PAUSE
	RET
