// Package client is the Go library apps use to talk to forged over its Unix socket.
package client
