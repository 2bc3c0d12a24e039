// Package daemon is the forged service: lifecycle, the socket server,
// sessions, residency and memory policy, configuration and the update loop.
package daemon
