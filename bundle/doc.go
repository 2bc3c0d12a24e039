// Package bundle reads and writes the published Core AI bundle formats
// (release.json, coreai/manifest.json), talks to the hub, and keeps the local store.
package bundle
