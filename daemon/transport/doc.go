// Package transport is the daemon's socket side: it creates the Unix
// socket (directory and permission rules), reads the kernel's account of
// each peer, frames messages with the wire validator, and runs each
// connection's writer with backpressure and slow-reader disconnect. It knows
// nothing of what the ops do.
package transport
