// Package daemon assembles the forged service: Config, New and Serve tie the
// transport (daemon/transport), the op handlers (daemon/ops) and the state
// (daemon/state) together, hold the published state and the live settings,
// and keep the exported names other packages use (Backend and its types,
// Residency, Bundles, LiveSettings, …) as aliases of where they now live.
package daemon
