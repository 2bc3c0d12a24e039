// Package client is the Go library apps use to talk to forged over its Unix
// socket (docs/PROTOCOL.md). Dial connects and says hello; Chat and Generate
// return a Stream to range over; errors from the daemon are *Error with the
// protocol's Code. The wire types live in client/wire, shared with the daemon.
package client
