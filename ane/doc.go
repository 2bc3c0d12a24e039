// Package ane is the model runtime: the Engine interface every backend
// implements and what the backends share.
package ane
